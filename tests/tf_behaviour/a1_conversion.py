"""Where does Python control flow / value access on a tensor break in a custom gradient's f or grad?

Issue 21 §1, contexts 1, 2, 5 and 8. One body per context, the same in each; ``USE`` picks the
construct (a Python string test, which AutoGraph leaves to Python) so the only difference between
contexts is where the custom gradient is defined and from where it is called:

- ``module``: a module-level ``@tf.custom_gradient`` called from a tf.function (context 1);
- ``nested``: the same body defined inside the function that tf.function traces (context 2);
- ``factory``: defined in a module-level factory that the traced function calls;
- ``prebuilt``: the factory called once eagerly, the result called from a tf.function;
- ``nested-noautograph``: ``nested`` under ``tf.function(autograph=False)``.

Constructs ``helper`` / ``tf.function helper`` call a module-level function holding the tensor
``if`` (plain / decorated with ``@tf.function``, context 5). The ``raise ...`` constructs put
``.numpy()`` only in an error message (context 8).
"""

# statement-form `if` on a tensor is what is under test; one branch per construct
# ruff: noqa: SIM108, C901

from __future__ import annotations

from _harness import at_points, both, mark, row, tape_value

import tensorflow as tf

USE = {"f": "", "grad": ""}

F_CONSTRUCTS = ("if t", "while t", "for range(t)", "bool(t)", "t.numpy()", "float(t)", "len(t)",
                "assert t", "t and t", "a if t else b", "int(t)",
                "helper", "tf.function helper",
                "raise, static test, .numpy() in message", "raise, tensor test, .numpy() in message",
                "raise, tensor test, plain message",
                "assert op, .numpy() in message")
GRAD_CONSTRUCTS = ("if t", "while t", "for range(t)", "bool(t)", "t.numpy()", "float(t)", "len(t)",
                   "assert t", "t and t", "a if t else b", "int(t)",
                   "helper", "tf.function helper")


def plain_helper(x: tf.Tensor, a: float, b: float) -> tf.Tensor:
    if x > 0:
        return x * a
    return x * b


@tf.function
def tf_function_helper(x: tf.Tensor, a: float, b: float) -> tf.Tensor:
    if x > 0:
        return x * a
    return x * b


@tf.custom_gradient
def cg_module(x):
    mark("f")
    y = tf.where(x > 0, x * 2.0, x * -3.0)
    k = tf.constant(0)
    use = USE["f"]
    if use == "if t":
        if x > 0:
            y = x * 2.0
        else:
            y = x * -3.0
    elif use == "while t":
        while k < 1:
            k += 1
    elif use == "for range(t)":
        for _ in range(tf.constant(1)):
            k += 1
    elif use == "bool(t)":
        y = x * 2.0 if bool(x > 0) else x * -3.0
    elif use == "t.numpy()":
        _ = x.numpy()
    elif use == "float(t)":
        _ = float(x)
    elif use == "len(t)":
        _ = len(tf.reshape(x, [1]))
    elif use == "assert t":
        assert x > -100.0
    elif use == "t and t":
        if (x > 0) and (x < 100.0):
            y = x * 2.0
        else:
            y = x * -3.0
    elif use == "a if t else b":
        y = x * 2.0 if x > 0 else x * -3.0
    elif use == "int(t)":
        _ = int(x)
    elif use == "helper":
        y = plain_helper(x, 2.0, -3.0)
    elif use == "tf.function helper":
        y = tf_function_helper(x, 2.0, -3.0)
    elif use == "raise, static test, .numpy() in message":
        if x.shape.rank != 0:
            raise ValueError(f"want a scalar, got {x.numpy()}")
    elif use == "raise, tensor test, .numpy() in message":
        if x < -100.0:
            raise ValueError(f"too small: {x.numpy()}")
    elif use == "raise, tensor test, plain message":
        if x < -100.0:
            raise ValueError("too small")
    elif use == "assert op, .numpy() in message":
        tf.debugging.assert_greater(x, -100.0, message=f"too small: {x.numpy()}")

    def grad(dy):
        mark("grad")
        g = dy * tf.where(x > 0, 20.0, -30.0)
        n = tf.constant(0)
        use = USE["grad"]
        if use == "if t":
            if x > 0:
                g = dy * 20.0
            else:
                g = dy * -30.0
        elif use == "while t":
            while n < 1:
                n += 1
        elif use == "for range(t)":
            for _ in range(tf.constant(1)):
                n += 1
        elif use == "bool(t)":
            g = dy * 20.0 if bool(x > 0) else dy * -30.0
        elif use == "t.numpy()":
            _ = dy.numpy()
        elif use == "float(t)":
            _ = float(dy)
        elif use == "len(t)":
            _ = len(tf.reshape(dy, [1]))
        elif use == "assert t":
            assert dy > -100.0
        elif use == "t and t":
            if (x > 0) and (x < 100.0):
                g = dy * 20.0
            else:
                g = dy * -30.0
        elif use == "a if t else b":
            g = dy * 20.0 if x > 0 else dy * -30.0
        elif use == "int(t)":
            _ = int(dy)
        elif use == "helper":
            g = plain_helper(x, 20.0, -30.0) / x * dy
        elif use == "tf.function helper":
            g = tf_function_helper(x, 20.0, -30.0) / x * dy
        return g

    return y, grad


def make_cg():
    """The same body as cg_module, defined when the factory runs."""

    @tf.custom_gradient
    def cg(x):
        mark("f")
        y = tf.where(x > 0, x * 2.0, x * -3.0)
        k = tf.constant(0)
        use = USE["f"]
        if use == "if t":
            if x > 0:
                y = x * 2.0
            else:
                y = x * -3.0
        elif use == "while t":
            while k < 1:
                k += 1
        elif use == "for range(t)":
            for _ in range(tf.constant(1)):
                k += 1
        elif use == "bool(t)":
            y = x * 2.0 if bool(x > 0) else x * -3.0
        elif use == "t.numpy()":
            _ = x.numpy()
        elif use == "float(t)":
            _ = float(x)
        elif use == "len(t)":
            _ = len(tf.reshape(x, [1]))
        elif use == "assert t":
            assert x > -100.0
        elif use == "t and t":
            if (x > 0) and (x < 100.0):
                y = x * 2.0
            else:
                y = x * -3.0
        elif use == "a if t else b":
            y = x * 2.0 if x > 0 else x * -3.0
        elif use == "int(t)":
            _ = int(x)
        elif use == "helper":
            y = plain_helper(x, 2.0, -3.0)
        elif use == "tf.function helper":
            y = tf_function_helper(x, 2.0, -3.0)
        elif use == "raise, static test, .numpy() in message":
            if x.shape.rank != 0:
                raise ValueError(f"want a scalar, got {x.numpy()}")
        elif use == "raise, tensor test, .numpy() in message":
            if x < -100.0:
                raise ValueError(f"too small: {x.numpy()}")
        elif use == "raise, tensor test, plain message":
            if x < -100.0:
                raise ValueError("too small")
        elif use == "assert op, .numpy() in message":
            tf.debugging.assert_greater(x, -100.0, message=f"too small: {x.numpy()}")

        def grad(dy):
            mark("grad")
            g = dy * tf.where(x > 0, 20.0, -30.0)
            n = tf.constant(0)
            use = USE["grad"]
            if use == "if t":
                if x > 0:
                    g = dy * 20.0
                else:
                    g = dy * -30.0
            elif use == "while t":
                while n < 1:
                    n += 1
            elif use == "for range(t)":
                for _ in range(tf.constant(1)):
                    n += 1
            elif use == "bool(t)":
                g = dy * 20.0 if bool(x > 0) else dy * -30.0
            elif use == "t.numpy()":
                _ = dy.numpy()
            elif use == "float(t)":
                _ = float(dy)
            elif use == "len(t)":
                _ = len(tf.reshape(dy, [1]))
            elif use == "assert t":
                assert dy > -100.0
            elif use == "t and t":
                if (x > 0) and (x < 100.0):
                    g = dy * 20.0
                else:
                    g = dy * -30.0
            elif use == "a if t else b":
                g = dy * 20.0 if x > 0 else dy * -30.0
            elif use == "int(t)":
                _ = int(dy)
            elif use == "helper":
                g = plain_helper(x, 20.0, -30.0) / x * dy
            elif use == "tf.function helper":
                g = tf_function_helper(x, 20.0, -30.0) / x * dy
            return g

        return y, grad

    return cg


def module_run(x):
    return tape_value(cg_module, x)


def nested_run(x):
    # a copy of make_cg's body would read the same; defining it here is the point of the scenario
    @tf.custom_gradient
    def cg(x):
        mark("f")
        y = tf.where(x > 0, x * 2.0, x * -3.0)
        k = tf.constant(0)
        use = USE["f"]
        if use == "if t":
            if x > 0:
                y = x * 2.0
            else:
                y = x * -3.0
        elif use == "while t":
            while k < 1:
                k += 1
        elif use == "for range(t)":
            for _ in range(tf.constant(1)):
                k += 1
        elif use == "bool(t)":
            y = x * 2.0 if bool(x > 0) else x * -3.0
        elif use == "t.numpy()":
            _ = x.numpy()
        elif use == "float(t)":
            _ = float(x)
        elif use == "len(t)":
            _ = len(tf.reshape(x, [1]))
        elif use == "assert t":
            assert x > -100.0
        elif use == "t and t":
            if (x > 0) and (x < 100.0):
                y = x * 2.0
            else:
                y = x * -3.0
        elif use == "a if t else b":
            y = x * 2.0 if x > 0 else x * -3.0
        elif use == "int(t)":
            _ = int(x)
        elif use == "helper":
            y = plain_helper(x, 2.0, -3.0)
        elif use == "tf.function helper":
            y = tf_function_helper(x, 2.0, -3.0)
        elif use == "raise, static test, .numpy() in message":
            if x.shape.rank != 0:
                raise ValueError(f"want a scalar, got {x.numpy()}")
        elif use == "raise, tensor test, .numpy() in message":
            if x < -100.0:
                raise ValueError(f"too small: {x.numpy()}")
        elif use == "raise, tensor test, plain message":
            if x < -100.0:
                raise ValueError("too small")
        elif use == "assert op, .numpy() in message":
            tf.debugging.assert_greater(x, -100.0, message=f"too small: {x.numpy()}")

        def grad(dy):
            mark("grad")
            g = dy * tf.where(x > 0, 20.0, -30.0)
            n = tf.constant(0)
            use = USE["grad"]
            if use == "if t":
                if x > 0:
                    g = dy * 20.0
                else:
                    g = dy * -30.0
            elif use == "while t":
                while n < 1:
                    n += 1
            elif use == "for range(t)":
                for _ in range(tf.constant(1)):
                    n += 1
            elif use == "bool(t)":
                g = dy * 20.0 if bool(x > 0) else dy * -30.0
            elif use == "t.numpy()":
                _ = dy.numpy()
            elif use == "float(t)":
                _ = float(dy)
            elif use == "len(t)":
                _ = len(tf.reshape(dy, [1]))
            elif use == "assert t":
                assert dy > -100.0
            elif use == "t and t":
                if (x > 0) and (x < 100.0):
                    g = dy * 20.0
                else:
                    g = dy * -30.0
            elif use == "a if t else b":
                g = dy * 20.0 if x > 0 else dy * -30.0
            elif use == "int(t)":
                _ = int(dy)
            elif use == "helper":
                g = plain_helper(x, 20.0, -30.0) / x * dy
            elif use == "tf.function helper":
                g = tf_function_helper(x, 20.0, -30.0) / x * dy
            return g

        return y, grad

    return tape_value(cg, x)


def factory_run(x):
    return tape_value(make_cg(), x)


PREBUILT = make_cg()


def prebuilt_run(x):
    return tape_value(PREBUILT, x)


def nested_noautograph(x):
    return nested_run(x)


CONTEXTS = {"module": module_run, "nested": nested_run, "factory": factory_run, "prebuilt": prebuilt_run}


def main() -> None:
    for body, constructs in (("f", F_CONSTRUCTS), ("grad", GRAD_CONSTRUCTS)):
        for construct in constructs:
            USE.update({"f": "", "grad": ""})
            USE[body] = construct
            for context, run in CONTEXTS.items():
                both(f"{context} | {construct} in {body}", run)
    for body in ("f", "grad"):
        USE.update({"f": "", "grad": ""})
        USE[body] = "if t"
        row(f"nested-noautograph | if t in {body}", None,
            lambda: at_points(tf.function(nested_noautograph, autograph=False,
                                          input_signature=[tf.TensorSpec([], tf.float32)])))


if __name__ == "__main__":
    main()

"""Issue 21 §3: in which order do the variables a custom gradient's f reads reach ``grad``'s
``variables``, eagerly and under tf.function, and which way of matching gradients to them is right.

Three variables are created in the order zeta, alpha, mid and read in f in the order mid, zeta,
alpha; y = 1 * mid + 2 * zeta + 3 * alpha + x, so the right gradients are (mid, zeta, alpha) =
(1, 2, 3). Anything that depends on the eager order is printed inside ``<varies: ...>`` (it comes
from a ``set`` of references and changes between runs); the test compares it as ``<varies>``.
"""

from __future__ import annotations

from _harness import mark, row

import keras
import tensorflow as tf

COEF = {"mid": 1.0, "zeta": 2.0, "alpha": 3.0}
ORDER: list[str] = []


def make_vars() -> dict[str, tf.Variable]:
    return {name: tf.Variable(0.5, name=name) for name in ("zeta", "alpha", "mid")}


def base(v: tf.Variable) -> str:
    return v.name.split(":")[0].rsplit("/", 1)[-1]


def make_cg(vs: dict[str, tf.Variable], match: str):
    """match: "read order" (gradients listed as f reads the variables), "name" or "ref"."""
    read_order = ["mid", "zeta", "alpha"]

    @tf.custom_gradient
    def cg(x):
        mark("f")
        y = x
        for name in read_order:
            y = y + COEF[name] * vs[name]

        def grad(dy, variables=None):
            mark("grad")
            ORDER[:] = [base(v) for v in variables]
            if match == "read order":
                var_grads = [dy * COEF[name] for name in read_order]
            elif match == "name":
                var_grads = [dy * COEF[base(v)] for v in variables]
            else:
                coef = {vs[name].ref(): COEF[name] for name in vs}
                var_grads = [dy * coef[v.ref()] for v in variables]
            return dy, var_grads

        return y, grad

    return cg


def gradients(vs: dict[str, tf.Variable], match: str):
    cg = make_cg(vs, match)

    def run():
        x = tf.constant(1.0)
        with tf.GradientTape() as tape:
            y = cg(x)
        return tape.gradient(y, [vs["mid"], vs["zeta"], vs["alpha"]])

    return run


def describe(grads, eager: bool) -> str:
    got = ",".join(f"{float(g):g}" for g in grads)
    verdict = "right" if got == "1,2,3" else "WRONG"
    order = ",".join(ORDER)
    if eager:
        return f"variables=<varies: {order}> grads=<varies: {got} {verdict}>"
    return f"variables={order} grads={got} {verdict}"


def scenario(match: str, stable_eager: bool) -> None:
    def eager() -> str:
        grads = gradients(make_vars(), match)()
        text = describe(grads, True)
        if stable_eager:  # the gradients do not depend on the order: show them
            text = text.split(" grads=")[0] + " grads=" + ",".join(f"{float(g):g}" for g in grads) + \
                (" right" if [float(g) for g in grads] == [1.0, 2.0, 3.0] else " WRONG")
        return text

    def traced() -> str:
        vs = make_vars()
        return describe(tf.function(gradients(vs, match))(), False)

    row(f"tf.Variable, grads matched by {match}", eager, traced)


def eager_orders(trials: int = 30) -> None:
    """How many distinct eager orders one process sees (fresh variables each time)."""
    seen, keep = set(), []
    for _ in range(trials):
        vs = make_vars()
        keep.append(vs)
        gradients(vs, "name")()
        seen.add(tuple(ORDER))
    row(f"eager order over {trials} fresh sets of variables", lambda: f"<varies: {len(seen)} distinct orders>",
        None)


class Layer3(keras.layers.Layer):
    def build(self, input_shape) -> None:
        for name in ("zeta", "alpha", "mid"):
            setattr(self, name, self.add_weight(shape=(), initializer=keras.initializers.Constant(0.5), name=name))

    def call(self, x):
        vs = {name: getattr(self, name) for name in ("zeta", "alpha", "mid")}

        @tf.custom_gradient
        def cg(x):
            mark("f")
            y = x + vs["mid"] * 1.0 + vs["zeta"] * 2.0 + vs["alpha"] * 3.0

            def grad(dy, variables=None):
                mark("grad")
                ORDER[:] = [base(v) for v in variables]
                by_name = [dy * COEF[base(v)] for v in variables]
                by_value = [v is vs[base(v)].value for v in variables]
                by_ref = [v.ref() == vs[base(v)].value.ref() for v in variables]
                INFO[:] = [type(variables[0]).__name__, variables[0].name, all(by_value), all(by_ref)]
                return dy, by_name

            return y, grad

        return cg(x)


INFO: list[object] = []


def keras_layer(eager: bool) -> str:
    layer = Layer3()
    layer.build(())

    def run():
        with tf.GradientTape() as tape:
            y = layer(tf.constant(1.0))
        return tape.gradient(y, [layer.mid, layer.zeta, layer.alpha])

    grads = run() if eager else tf.function(run)()
    got = ",".join(f"{float(g):g}" for g in grads)
    kind, name, is_value, ref = INFO
    order = f"<varies: {','.join(ORDER)}>" if eager else ",".join(ORDER)
    return (f"variables={order} (a {kind} named {name!r}; `v is layer.w.value`: {is_value}; "
            f"v.ref() == layer.w.value.ref(): {ref}) grads by name={got}")


def main() -> None:
    scenario("read order", stable_eager=False)
    scenario("name", stable_eager=True)
    scenario("ref", stable_eager=True)
    eager_orders()
    row("Keras 3 layer weights", lambda: keras_layer(True), lambda: keras_layer(False))


if __name__ == "__main__":
    main()

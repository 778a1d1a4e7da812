"""CG014 self-as-input: a custom-gradient method is called with self as a positional input."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from cg_lint.codes import CG014
from cg_lint.findings import Finding
from cg_lint.model.records import CustomGradient
from cg_lint.rules.base import LintContext, Rule, describe

_FAILS = ("TF takes the instance for an input and raises ValueError eagerly (Attempt to convert a value "
          "(<... object>) with an unsupported type) and TypeError under tf.function")


class SelfAsInput(Rule):
    """A custom-gradient method is called with `self` as a positional input.

    ## What it does
    Flags a method decorated with `@tf.custom_gradient` below another decorator
    (`@tf.Module.with_name_scope`, a `functools.wraps` wrapper, `@tf.function`), and calls of such
    a method through its class (`Base.method(self, x)`).

    ## Why is this bad?
    `tf.custom_gradient` binds `self` only when the method is looked up on an instance
    (`obj.method(x)`: its descriptor's `__get__`). A decorator above it wraps the plain function
    and calls it as `method(self, x)`, and so does `Base.method(self, x)`: `self` arrives as the
    first positional argument, which TF takes for an input and tries to convert to a tensor. It
    fails on every call, eagerly and under `tf.function`.

    ## Example
    ```python
    class Scale(tf.Module):
        @tf.Module.with_name_scope
        @tf.custom_gradient
        def __call__(self, x):
            return x * 2.0, lambda dy: dy * 2.0
    ```

    ## Use instead
    ```python
    class Scale(tf.Module):
        @tf.Module.with_name_scope
        def __call__(self, x):
            @tf.custom_gradient
            def scaled(v):
                return v * 2.0, lambda dy: dy * 2.0
            return scaled(x)
    ```
    Or call it on the instance: `super().method(x)`, not `Base.method(self, x)`.

    ## Fix safety
    No automatic fix: moving the decorator changes the method's structure.
    """

    code = CG014
    VALID = (
        """
import tensorflow as tf

class Base(tf.Module):
    @tf.custom_gradient
    def double(self, x):
        return x * 2.0, lambda dy: dy * 2.0

class Child(Base):
    def double(self, x):
        return super().double(x)  # looked up on the instance: self is bound

# tf: grad(Child().double, [1.0, 2.0]) => both ok
""",
    )
    INVALID = (
        """
import tensorflow as tf

class Scale(tf.Module):
    @tf.Module.with_name_scope
    @tf.custom_gradient
    def __call__(self, x):  # expect: CG014
        return x * 2.0, lambda dy: dy * 2.0

# tf: grad(Scale(), [1.0, 2.0]) => eager raises unsupported type; graph raises Failed to convert elements
""",
        """
import tensorflow as tf

class Base(tf.Module):
    @tf.custom_gradient
    def double(self, x):
        return x * 2.0, lambda dy: dy * 2.0

class Child(Base):
    def double(self, x):
        return Base.double(self, x)  # expect: CG014

# tf: grad(Child().double, [1.0, 2.0]) => eager raises unsupported type; graph raises Failed to convert elements
""",
    )

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        methods = [r for r in ctx.records if r.kind == "method" and type(r.node) is cst.FunctionDef]
        if not methods:
            return
        for record in methods:
            above = _decorators_above(ctx, record)
            if above:
                yield self.finding(ctx, record.line, record.column, (
                    f"'{record.name}' is a method whose @custom_gradient sits below {above}: that wrapper calls "
                    f"it as a plain function with self first, so {_FAILS}; put @tf.custom_gradient on a "
                    f"function nested in the method instead"), record.qualname)
        by_class = {(id(r.class_node), r.node.name.value): r for r in methods}  # type: ignore[union-attr]
        for node in ctx.index.nodes:  # the prefilter keeps `Class.method(` calls
            if type(node) is not cst.Call or type(node.func) is not cst.Attribute or not node.args:
                continue
            target = _through_class(ctx, node.func, by_class)
            first = node.args[0]
            if target is None or first.keyword is not None or first.star:
                continue
            line, column = ctx.position(node)
            yield self.finding(ctx, line, column, (
                f"{describe(node.func)}({describe(first.value)}, ...) calls the custom-gradient method "
                f"'{target.name}' through its class, so self is its first positional argument and {_FAILS}; "
                f"call it on the instance (super().{target.name}(...))"), target.qualname)


def _decorators_above(ctx: LintContext, record: CustomGradient) -> str | None:
    decorators = record.node.decorators  # type: ignore[union-attr]
    for i, dec in enumerate(decorators):
        expr = dec.decorator.func if type(dec.decorator) is cst.Call else dec.decorator
        if ctx.index.is_custom_gradient(expr):
            wrappers = [d for d in decorators[:i] if not _descriptor(d.decorator)]
            return ", ".join(f"@{describe(d.decorator)}" for d in wrappers) or None
    return None


def _descriptor(expr: cst.BaseExpression) -> bool:
    """Decorators that keep Python's method binding (they are not called with self)."""
    name = cst.helpers.get_full_name_for_node(expr) or ""
    return name.rsplit(".", 1)[-1] in ("staticmethod", "classmethod", "property", "abstractmethod", "override")


def _through_class(ctx: LintContext, func: cst.Attribute,
                   by_class: dict[tuple[int, str], CustomGradient]) -> CustomGradient | None:
    """``Base.method`` where ``Base`` names a class of this file that defines the method."""
    if type(func.value) is not cst.Name or func.value.value in ("self", "cls", "super"):
        return None
    for value in ctx.index.lookup_function(func.value):
        if type(value) is cst.ClassDef:
            return by_class.get((id(value), func.attr.value))
    return None

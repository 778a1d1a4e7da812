"""The records every rule reads: one ``CustomGradient`` per definition in a file."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Union

import libcst as cst

FuncNode = Union[cst.FunctionDef, cst.Lambda]  # noqa: UP007 - a runtime alias: `|` of classes needs 3.10's types.UnionType
Locate = Callable[[cst.CSTNode], "tuple[int, int]"]


@dataclass
class Located:
    """A record with a place in the file; positions are computed only when something is reported."""

    anchor: cst.CSTNode
    locate: Locate = field(repr=False, compare=False)

    @property
    def line(self) -> int:
        return self.locate(self.anchor)[0]

    @property
    def column(self) -> int:
        return self.locate(self.anchor)[1]


@dataclass
class Param:
    name: str
    node: cst.Param
    has_default: bool


@dataclass
class Signature:
    """Parameters as TF sees them: ``positional`` excludes a bound ``self``/``cls``."""

    positional: list[Param]
    varargs: Param | None
    kwonly: list[Param]
    kwargs: Param | None

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.positional]

    @property
    def required(self) -> list[Param]:
        return [p for p in self.positional if not p.has_default]

    def all_names(self) -> set[str]:
        names = {p.name for p in self.positional + self.kwonly}
        for star in (self.varargs, self.kwargs):
            if star is not None:
                names.add(star.name)
        return names


@dataclass
class ReturnSite(Located):
    """A ``return`` statement, or the body of a lambda (``anchor`` is that node)."""

    value: cst.BaseExpression | None = None

    @property
    def node(self) -> cst.CSTNode:
        return self.anchor


@dataclass
class VariableRead(Located):
    """A trainable variable read in a body (``anchor`` is the expression that reads it)."""

    text: str = ""  # how the source spells it: `w`, `self.kernel`, `self.dense`
    kind: str = "variable"  # variable | created | attribute | layer | helper


@dataclass
class GradFn(Located):
    """A gradient function returned by a forward (nested def, lambda, name bound to a def, method)."""

    node: FuncNode = None  # type: ignore[assignment]
    name: str = ""
    signature: Signature = None  # type: ignore[assignment]
    returns: list[ReturnSite] = field(default_factory=list)
    bound_method: bool = False
    # decorated with custom_gradient itself: every return is again (grads, grad_fn)
    is_custom_gradient: bool = False
    # variables (trainable or not) this grad reads itself (they should be captured in the forward instead)
    variable_reads: list[VariableRead] = field(default_factory=list)

    @property
    def upstream(self) -> list[Param]:
        """Positional parameters that receive upstream gradients (``variables`` is a keyword)."""
        return [p for p in self.signature.positional if p.name != "variables"]

    @property
    def declares_variables(self) -> bool:
        sig = self.signature
        return any(p.name == "variables" for p in sig.positional + sig.kwonly)

    @property
    def accepts_variables(self) -> bool:
        return self.declares_variables or self.signature.kwargs is not None


@dataclass
class ForwardReturn:
    site: ReturnSite
    # the returned elements when the value is a literal tuple/list, else None
    elements: list[cst.BaseExpression] | None
    outputs: cst.BaseExpression | None = None
    grad_expr: cst.BaseExpression | None = None
    grad: GradFn | None = None


@dataclass
class CallSite(Located):
    """A call of a custom-gradient function in the same file (``anchor`` is the Call)."""

    positional: list[cst.Arg] = field(default_factory=list)
    keywords: list[cst.Arg] = field(default_factory=list)
    has_star: bool = False
    via_partial: bool = False

    @property
    def node(self) -> cst.Call:
        return self.anchor  # type: ignore[return-value]


@dataclass
class CustomGradient(Located):
    """One definition; ``anchor`` (the def's name, or the lambda) is where findings about it go."""

    name: str = ""  # the name callers use
    qualname: str = ""
    kind: str = "function"  # function | method | staticmethod | classmethod | nested | lambda
    node: FuncNode = None  # type: ignore[assignment]
    signature: Signature = None  # type: ignore[assignment]
    returns: list[ForwardReturn] = field(default_factory=list)
    grads: list[GradFn] = field(default_factory=list)
    call_sites: list[CallSite] = field(default_factory=list)
    # positional inputs used as sequences in the body: each may flatten to several inputs
    structured_params: set[str] = field(default_factory=set)
    # of those, the ones only ever unpacked to a fixed number of names (`a, b = xs`): their length
    structured_sizes: dict[str, int] = field(default_factory=dict)
    class_node: cst.ClassDef | None = None
    # the nodes a caller's Name resolves to (the def, or the target of `g = tf.custom_gradient(f)`)
    binding_nodes: list[cst.CSTNode] = field(default_factory=list)
    # trainable variables the forward reads: TF then passes `variables=` to grad
    variable_reads: list[VariableRead] = field(default_factory=list)

    @property
    def inputs(self) -> list[str]:
        return self.signature.names

    @property
    def has_varargs(self) -> bool:
        return self.signature.varargs is not None

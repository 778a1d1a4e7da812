"""String formatting that needs a tensor's value: `"%d" % t`, `f"{t:.3f}"`, `"{:.2f}".format(t)`.

A symbolic tensor formats as text with `%s`, `%r`, `{}` and `f"{t}"`, but a numeric `%`
conversion asks for a real number (TypeError: %d format: a real number is required, not
SymbolicTensor) and a format spec reaches `SymbolicTensor.__format__`, which takes none (TypeError:
unsupported format string passed to SymbolicTensor.__format__). Eagerly both work on a scalar.
Only literal format strings are read; anything unclear stays quiet.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable

import libcst as cst

IsTensor = Callable[[cst.BaseExpression], bool]

# one %-conversion: optional (key), flags, width, precision, length modifier, conversion type
_PERCENT = re.compile(r"%(?:\((?P<key>[^)]*)\))?[#0\- +]*(?P<width>\*|\d+)?(?:\.(?P<prec>\*|\d+))?[hlL]?"
                      r"(?P<conv>.)", re.DOTALL)
_NUMERIC = frozenset("diouxXeEfFgGc")
_SPEC_ERROR = "unsupported format string passed to SymbolicTensor.__format__"


def _literal(expr: cst.BaseExpression) -> str | None:
    """The value of a plain string literal (not bytes, not an f-string)."""
    if type(expr) in (cst.SimpleString, cst.ConcatenatedString):
        value = expr.evaluated_value  # type: ignore[union-attr]
        return value if isinstance(value, str) else None
    return None


def percent_problem(node: cst.BinaryOperation, is_tensor: IsTensor
                    ) -> tuple[cst.BaseExpression, str, str] | None:
    """``"..." % args`` where a numeric conversion gets a tensor: (the tensor, what, the error)."""
    if type(node.operator) is not cst.Modulo:
        return None
    text = _literal(node.left)
    if text is None:
        return None
    specs = [m for m in _PERCENT.finditer(text) if m.group("conv") != "%"]
    if not specs:
        return None
    right = node.right
    if any(m.group("key") is not None for m in specs):
        if type(right) is not cst.Dict:
            return None
        values = {_literal(e.key): e.value for e in right.elements if type(e) is cst.DictElement}
        pairs = [(m, values.get(m.group("key"))) for m in specs]
    else:
        args: list[cst.BaseExpression]
        if type(right) is cst.Tuple:
            if any(type(e) is not cst.Element for e in right.elements):  # `*rest`: not counted
                return None
            args = [e.value for e in right.elements]
        elif len(specs) == 1 and not (specs[0].group("width") == "*" or specs[0].group("prec") == "*"):
            args = [right]
        else:
            return None
        pairs = []
        for m in specs:
            args = args[(m.group("width") == "*") + (m.group("prec") == "*"):]  # `*` takes an argument
            if not args:
                return None
            pairs.append((m, args.pop(0)))
    for m, arg in pairs:
        if arg is not None and m.group("conv") in _NUMERIC and is_tensor(arg):
            error = ("%d format: a real number is required, not SymbolicTensor" if m.group("conv") in "diouxXc"
                     else "must be real number, not SymbolicTensor")
            return arg, f"'%{m.group('conv')}' formats a tensor", error
    return None


def fstring_problem(node: cst.FormattedStringExpression, is_tensor: IsTensor
                    ) -> tuple[cst.BaseExpression, str, str] | None:
    """``f"{t:.3f}"``: a format spec applied to the tensor itself (no ``!s``/``!r`` first)."""
    if node.conversion is not None or not node.format_spec:
        return None
    if not any(type(p) is cst.FormattedStringText and p.value for p in node.format_spec):
        return None  # `{t:{spec}}`: the spec may be empty when it runs
    if is_tensor(node.expression):
        return node.expression, "applies a format spec to a tensor in an f-string", _SPEC_ERROR
    return None


def call_problem(node: cst.Call, is_tensor: IsTensor, builtin_format: bool
                 ) -> tuple[cst.BaseExpression, str, str] | None:
    """``format(t, ".3f")`` (``builtin_format``: the call is the builtin) and ``"{:.3f}".format(t)``."""
    positional = [a.value for a in node.args if a.keyword is None and not a.star]
    if builtin_format:
        if len(node.args) != 2 or len(positional) != 2 or not _literal(positional[1]):
            return None
        return (positional[0], "calls format() with a spec on a tensor", _SPEC_ERROR) if is_tensor(positional[0]) \
            else None
    func = node.func
    if type(func) is not cst.Attribute or func.attr.value != "format":
        return None
    text = _literal(func.value)
    if text is None or any(a.star for a in node.args):
        return None
    keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
    try:
        fields = list(string.Formatter().parse(text))
    except ValueError:
        return None  # malformed: str.format raises on it anyway
    auto = 0
    for _, name, spec, conversion in fields:
        if name is None:
            continue
        if spec and "{" in spec:
            return None  # nested fields number themselves: not followed
        if name == "":
            index: int | str = auto
            auto += 1
        elif name.isdigit():
            index = int(name)
        elif name.isidentifier():
            index = name
        else:
            continue  # `{0.shape}`, `{x[0]}`: an attribute or item of the argument
        if not spec or conversion is not None:
            continue
        arg = keywords.get(index) if isinstance(index, str) else (
            positional[index] if index < len(positional) else None)
        if arg is not None and is_tensor(arg):
            return arg, "applies a format spec to a tensor with str.format()", _SPEC_ERROR
    return None

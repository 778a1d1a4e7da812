"""Map an exception raised while running a custom gradient to the linter's rule code.

TensorFlow's messages are matched on stable substrings (they drift between versions, see
docs/tf-contract.md). Returns ``None`` for errors that say nothing about the custom-gradient contract
(a probe of the wrong shape, say): the caller then tries the next input.
"""

from __future__ import annotations

from collections.abc import Sequence

from cg_lint.codes import CG001, CG003, CG004, CG006, CG008, CG009, CG010, CG011, CG012, CODES, Code

from .issues import check_error_detail, code_of_check_error

# (code, substrings any of which identifies it, short description)
_PATTERNS: tuple[tuple[Code, tuple[str, ...], str], ...] = (
    (CG008, ("supports keywords arguments only when eager",), "keyword arguments at the call site"),
    (CG004, ("must accept keyword argument 'variables'",),
     "the forward reads variables but grad does not accept `variables`"),
    (CG006, ('can only concatenate list (not "tuple") to list',),
     "variable gradients returned as a tuple, not a list"),
    (CG003, ("Must return gradient for each variable", "expected to return", "returned too few gradients",
               "returned too many gradients", "Num gradients"), "wrong number of gradients"),
    (CG001, ("unsupported callable", "too many values to unpack (expected 2)",
               "not enough values to unpack (expected 2"),
     "the forward does not return (outputs, grad_fn)"),
    (CG010, ("has no attribute 'numpy'", "argument must be a string or a real number, not 'SymbolicTensor'",
               "argument must be a string, a bytes-like object or a real number, not 'SymbolicTensor'",
               "len is not well defined for a symbolic Tensor", "Cannot convert a symbolic tf.Tensor to a numpy array",
               "Cannot convert a symbolic Tensor", "__array__"),
     "`.numpy()`, `float()`, `int()`, `len()` or NumPy on a symbolic tensor"),
    (CG011, ("must be a scalar, but it has shape",), "`tf.cond` with a non-scalar predicate"),
    (CG009, ("symbolic tf.Tensor as a Python bool", "Iterating over a symbolic tf.Tensor",
               "cannot be interpreted as an integer"),
     "Python control flow on a tensor"),
)

def classify(exc: BaseException, python_positionals: Sequence[object] = ()) -> tuple[str, str] | None:
    """``(code, one-line reason)`` for a contract failure, else ``None``.

    ``python_positionals`` are the non-tensor positional arguments of the call: when there are
    some, a bool/int failure in graph mode is the CG012 pattern (a Python flag turned into a tensor).
    """
    own = code_of_check_error(exc)
    if own is not None:
        return own, check_error_detail(exc)
    text = str(exc).replace("`", "")
    for code, needles, description in _PATTERNS:
        if any(needle in text for needle in needles):
            if code == CG009 and any(isinstance(v, (bool, int, str)) for v in python_positionals):
                code, description = CG012, "a positional Python flag/int parameter used as a Python value"
            return code, f"{description}: {describe(exc, text)}"
    return None


def describe(exc: BaseException, text: str | None = None) -> str:
    """``Type: first line``, saying the type once: AutoGraph's rendering of an error raised in user
    code already ends with ``AttributeError: ...``, which is then the line as it stands."""
    line = first_line(str(exc) if text is None else text)
    head = line.split(": ", 1)[0]
    suffixes = ("Error", "Exception", "Warning")
    if head.isidentifier() and head.endswith(suffixes) and head not in suffixes and head != line:
        return line
    return f"{type(exc).__name__}: {line}"


def is_graph_only(code: str) -> bool:
    return code in CODES and CODES[code].graph_only


def first_line(text: str, limit: int = 160) -> str:
    """The informative line of a TF message (AutoGraph prepends 'in user code:' and a stack)."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    chosen = lines[0]
    if chosen.startswith("in user code") or chosen.startswith("File "):
        tail = [ln for ln in lines if not ln.startswith(("File ", "in user code"))]
        # the cause is the last line of AutoGraph's rendering, after the stack
        chosen = tail[-1] if tail else lines[-1]
    chosen = " ".join(chosen.split())
    sentence_end = chosen.find(". ")
    if sentence_end > 0:
        chosen = chosen[: sentence_end + 1]
    return chosen if len(chosen) <= limit else chosen[: limit - 3] + "..."

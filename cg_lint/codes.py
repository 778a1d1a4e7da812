"""Every code either tool reports, in one registry: the linter's rules (CG0xx) and the checks only a
run can make (CG1xx).

A ``Code`` is the string itself (``CG003 == "CG003"``, so it compares, hashes and serialises as
one) carrying what both tools say about it: a stable kebab-case ``name``, a one-line ``summary``, a
``theme``, whether TensorFlow raises it only under ``tf.function`` (``graph_only``), whether it is a
note rather than a failure (``info``), and the ``page`` that documents it. Rule classes take their
name, title and theme from here; runtime-check records its issues under these codes.
"""

from __future__ import annotations

RULE_PAGES = "docs/rules"
RUNTIME_PAGE = "docs/runtime-check.md"


class Code(str):
    name: str
    summary: str  # one line (``title`` would shadow str.title)
    theme: str
    graph_only: bool
    info: bool

    def __new__(cls, code: str, name: str, summary: str, theme: str, graph_only: bool = False,
                info: bool = False) -> Code:
        self = super().__new__(cls, code)
        self.name, self.summary, self.theme = name, summary, theme
        self.graph_only, self.info = graph_only, info
        return self

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return lookup, (str(self),)  # the registry's own object, in another process too

    @property
    def is_rule(self) -> bool:
        """A rule of the linter (a class in cg_lint/rules/), which runtime-check may confirm."""
        return self.startswith("CG0")

    @property
    def runtime_only(self) -> bool:
        """Reported only by runtime-check: no static rule can see it."""
        return self.startswith("CG1")

    @property
    def page(self) -> str:
        """The documentation page, relative to the repository root."""
        if self.is_rule:
            return f"{RULE_PAGES}/{self}.md"
        return f"{RUNTIME_PAGE}#checks" if self.runtime_only else "README.md#flake8"


CODES: dict[str, Code] = {}


def _code(code: str, name: str, summary: str, theme: str, graph_only: bool = False, info: bool = False) -> Code:
    if code in CODES:
        raise ValueError(f"{code} is registered twice")
    CODES[code] = entry = Code(code, name, summary, theme, graph_only, info)
    return entry


def lookup(code: str) -> Code:
    """The registered code, or KeyError naming it."""
    try:
        return CODES[code]
    except KeyError:
        raise KeyError(f"{code} is not a cg-lint code (cg_lint/codes.py)") from None


# -- the linter's rules (each a class in cg_lint/rules/) ----------------------------------------

CG001 = _code("CG001", "forward-return-not-pair", "Forward does not return (outputs, grad_fn)", "arity")
CG002 = _code("CG002", "upstream-count-mismatch",
              "grad's upstream parameters do not match the number of outputs", "arity")
CG003 = _code("CG003", "gradient-count-mismatch",
              "grad returns a different number of gradients than there are inputs", "arity")
CG004 = _code("CG004", "missing-variables-argument",
              "forward reads variables but grad does not accept 'variables'", "variables")
CG005 = _code("CG005", "variables-return-not-pair",
              "grad takes variables but does not return (input_grads, variable_grads)", "variables")
CG006 = _code("CG006", "variable-grads-not-list", "variable gradients returned as a tuple", "variables")
CG007 = _code("CG007", "positional-variable-grads", "variable gradients listed by position", "variables")
CG008 = _code("CG008", "keyword-arguments", "keyword arguments at a call of a custom-gradient function",
              "call-sites")
CG009 = _code("CG009", "tensor-truth-value", "Python control flow or truth value on a tensor", "graph-mode",
              graph_only=True)
CG010 = _code("CG010", "tensor-as-python-value", ".numpy(), int()/float()/len(), NumPy or iteration on a tensor",
              "graph-mode", graph_only=True)
CG011 = _code("CG011", "elementwise-cond-predicate", "tf.cond predicate is element-wise and never reduced",
              "graph-mode", graph_only=True)
CG012 = _code("CG012", "input-used-as-python-value", "a positional input is used as a Python value",
              "graph-mode", graph_only=True)
CG013 = _code("CG013", "upstream-unused", "grad never reads its upstream gradient", "gradients")
CG014 = _code("CG014", "self-as-input", "a custom-gradient method is called with self as a positional input",
              "call-sites")
CG015 = _code("CG015", "static-batch-dimension",
              "x.shape[0] used as a number in a Keras layer, where the batch dimension is None when traced",
              "graph-mode", graph_only=True)
CG016 = _code("CG016", "numpy-kernel-dtype",
              "a tf.numpy_function kernel returns float64 where Tout says float32", "graph-mode", graph_only=True)
CG017 = _code("CG017", "unknown-static-shape",
              "the static shape of a tf.numpy_function/tf.py_function result is used before set_shape",
              "graph-mode", graph_only=True)
CG018 = _code("CG018", "variable-read-in-grad", "a tf.Variable is read inside grad", "variables")

# -- runtime-check only (see docs/runtime-check.md) ----------------------------------------------

CG101 = _code("CG101", "gradient-shape", "a gradient's shape differs from its input's (or variable's) shape",
              "gradients")
CG102 = _code("CG102", "gradient-dtype",
              "a gradient's dtype differs from its floating input's (or variable's) dtype", "gradients")
CG103 = _code("CG103", "gradient-not-tensor", "a gradient is a Python number or a NumPy array, not a tensor",
              "gradients")
CG104 = _code("CG104", "none-gradient",
              "grad returns `None` for a floating tensor input the forward depends on (the caller "
              "silently gets no gradient). Not for Python numbers, integer ids, or an input the "
              "forward's outputs do not move with (a threshold, a gradient-reversal strength, a "
              "tolerance: numeric derivative 0)",
              "gradients")
CG105 = _code("CG105", "non-finite-gradient",
              "a gradient contains NaN/Inf where the forward is finite and differentiable (also probed "
              "at ±100 and 0); confirmed by moving the input a step each way: where the forward is not "
              "finite on both sides (the edge of its domain, `sqrt` at 0) nothing is reported",
              "gradients")
CG106 = _code("CG106", "eager-graph-mismatch",
              "eager and traced results differ on the same inputs, or it works eagerly and fails traced: "
              "gradient values, or a forward that changes with the mode. Random or stateful ops (an "
              "eager run that differs from itself) are recognised and not reported",
              "graph-mode")
CG107 = _code("CG107", "numeric-gradient-mismatch",
              "(`--numeric`) the custom gradient disagrees with a float64 central-difference directional "
              "derivative", "numeric")
CG108 = _code("CG108", "ignores-upstream",
              "(`--zero-upstream`) with a zero upstream gradient, grad still returns non-zero values", "numeric")
CG109 = _code("CG109", "not-twice-differentiable",
              "(`--second-order`) grad is not itself differentiable: a directional second derivative "
              "through grad (a Hessian-vector product, in float64, eagerly and traced) fails, is "
              "NaN/Inf, differs between the modes, or disagrees with a central difference of the "
              "gradient, where that difference is finite. As PyTorch's `gradgradcheck`; catches "
              "`stop_gradient`, `tf.numpy_function` or ops without gradients inside grad",
              "numeric")
CG110 = _code("CG110", "upstream-nonlinear",
              "grad is not linear in its upstream gradient: grad(a*u1 + b*u2) differs from a*grad(u1) + "
              "b*grad(u2) for random non-unit upstreams, or grad does not depend on its upstream at all "
              "(it ignores the upstream, assumes it is one, or adds a term that does not scale with it). "
              "Not for a grad that clips its upstream (linear once the upstream is small) or normalises it, "
              "as its source shows, nor for one that draws random numbers",
              "numeric")
CG111 = _code("CG111", "gradient-shape-broadcast",
              "(`--broadcast-shapes`) as CG101, seen only on a bias/scale broadcast the search made up",
              "gradients")
CG120 = _code("CG120", "timeout", "the function did not finish within the per-function timeout", "run")
CG121 = _code("CG121", "crash", "the function crashed the process (abort, segfault)", "run")
CG122 = _code("CG122", "import-error", "the module failed to import (one line, not a traceback)", "run")
CG123 = _code("CG123", "memory-cap",
              "(`--max-memory`) the function needed more memory than the cap; the worker was stopped", "run")
CG130 = _code("CG130", "no-valid-inputs", "info: no valid inputs found (does not fail the run)", "inputs",
              info=True)

# -- the tool itself ------------------------------------------------------------------------------

CG999 = _code("CG999", "internal-error",
              "cg-lint could not check a file: a resource limit turned it away, or an internal error "
              "(please report those); flake8 shows it on line 1", "run")

INFO_CODES: frozenset[str] = frozenset(c for c in CODES.values() if c.info)

"""What the rules share to leave a lead (``Finding.lead``): which calls are of a function the file
imports from another module of the project, and CG003's question about one. The answers are in
``cg_lint/rules/lead_answers.py``."""

from __future__ import annotations

import json
import sys

import libcst as cst

from cg_lint.findings import Finding
from cg_lint.model.records import CustomGradient, ReturnSite
from cg_lint.rules.base import LintContext, Rule
from cg_lint.syntax.environments import Unknown

# packages whose functions are never a project's helpers (the tensor facts know TF's and Keras's ops)
LIBRARIES = frozenset({"tensorflow", "keras", "tf_keras", "numpy", "scipy", "jax", "torch", "tensorflow_probability",
                       "tensorflow_addons", "tf2onnx", "pandas", "sklearn", "absl", "six", "typing_extensions"})


def project_imports(ctx: LintContext) -> frozenset[str]:
    """Names the file's imports bind to something that may be a module of the project (not TF,
    Keras, NumPy, the standard library...): when there is none, no call needs a look."""
    key = ("project-imports",)
    if key not in ctx.cache:
        ctx.cache[key] = frozenset(
            bound for table in ctx.index.imports.values() for bound, full in table.items()
            if full.split(".")[0] not in LIBRARIES and full.split(".")[0] not in sys.stdlib_module_names)
    return ctx.cache[key]  # type: ignore[return-value]


def imported_name(ctx: LintContext, func: cst.BaseExpression) -> str | None:
    """The absolute dotted name of a function this file imports (``pkg.ops.safe_norm`` for
    ``safe_norm`` of ``from .ops import safe_norm``, or for ``ops.safe_norm``); None for a local, a
    builtin, a library's or the standard library's function."""
    base = func
    while type(base) is cst.Attribute:
        base = base.value
    if type(base) is not cst.Name or base.value not in project_imports(ctx):
        return None
    # bound by an import only (not also by a def or an assignment of this module)
    if not all(isinstance(v, Unknown) for v in ctx.index.module_env.bindings.get(base.value, ())):
        return None
    names = ctx.index.qualnames(func)  # empty when a local value shadows the import
    if len(names) != 1:
        return None
    name = next(iter(names))
    top = name.split(".")[0]
    if "." not in name or top in LIBRARIES or top in sys.stdlib_module_names:
        return None
    return name


def count_lead(rule: Rule, ctx: LintContext, record: CustomGradient, site: ReturnSite, low: int,
               high: int | None, exact: frozenset[int], expected: str) -> Finding | None:
    """A lead for ``return helper(...)`` in grad, whose count only the helper's body says: what
    the expected inputs accept, and how the message says it."""
    value = site.value
    if type(value) is not cst.Call or not project_imports(ctx) or any(a.star for a in value.args) \
            or record.variable_reads:
        return None
    name = imported_name(ctx, value.func)
    if name is None:
        return None
    question = {"kind": "count", "name": name, "accepts": [low, high], "exact": sorted(exact),
                "record": record.name, "expected": expected}
    # `expected` may name a line of this file: in the message, a cached result is moved with care
    return Finding(ctx.path, site.line, site.column, rule.code, f"lead: how many gradients does '{name}' "
                   f"return? {expected}", record.qualname, lead=json.dumps(question, sort_keys=True))

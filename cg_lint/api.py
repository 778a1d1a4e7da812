"""Public API: lint a source, or list the custom-gradient definitions in it (used by runtime-check)."""

from __future__ import annotations

import os
from dataclasses import dataclass

import libcst as cst

from cg_lint.analyses.counting import expected_inputs, grad_counter, returned_counts, variables_branch
from cg_lint.analyses.upstream_uses import CLIP, NORMALISE, upstream_uses
from cg_lint.answering import answer_leads
from cg_lint.config import Settings
from cg_lint.engine import build_context, lint_source as _lint_source
from cg_lint.findings import FileError, Finding
from cg_lint.model.builder import qualname
from cg_lint.model.records import FuncNode
from cg_lint.prefilter.prepared import Prepared, prepare
from cg_lint.project.trace import TraceContexts
from cg_lint.syntax.index import FileIndex
from cg_lint.syntax.names import BUILDER_MARKERS, CUSTOM_GRADIENT_BUILDERS


@dataclass(frozen=True)
class Definition:
    name: str  # the name callers use
    qualname: str  # "f", "Cls.method", "outer.<locals>.inner"
    line: int
    column: int
    kind: str  # function | method | staticmethod | classmethod | nested | lambda | call (a TF builder's call)
    inputs: tuple[str, ...]
    has_varargs: bool


def lint_source(source: str | bytes, path: str, settings: Settings | None = None
                ) -> tuple[list[Finding], FileError | None]:
    """The file's own findings, with the leads about the project's other modules answered (read
    from disk, ``source`` in place of ``path``); the trace context is not applied."""
    result = _lint_source(source, path, settings)
    findings = result.findings
    if any(f.lead is not None for f in findings):
        text = source.decode("utf-8", "replace") if isinstance(source, bytes) else source
        findings = answer_leads(findings, TraceContexts({path: text}))
    return findings, result.error


def find_custom_gradients(source: str, path: str, settings: Settings | None = None,
                          builders: bool = False) -> list[Definition]:
    """Every custom-gradient definition in ``source`` (with the configured ``decorators``); [] when
    the source cannot be parsed. ``builders``: also the calls of TF's helpers that build a custom
    gradient at call time (``tf.recompute_grad(f)``), named as the function they are called in."""
    settings = settings or Settings()
    markers = settings.markers() + (BUILDER_MARKERS if builders else ())
    # the same gates as linting (text CPython rejects, or nested deeper than libcst survives, never
    # reaches libcst), without the reduction: every definition, not only what the rules need
    prepared = prepare(source, path, markers, reduce=False)
    if not isinstance(prepared, Prepared):
        return []
    try:
        ctx = build_context(prepared, path, settings)
    except RecursionError:
        return []
    found = [
        Definition(r.name, r.qualname, r.line, r.column, r.kind, tuple(r.inputs), r.has_varargs)
        for r in ctx.records
    ]
    if builders:
        known = {d.qualname for d in found}
        found += [d for d in _builder_calls(ctx.index) if d.qualname not in known]
    return found


__all__ = ["CLIP", "NORMALISE", "Definition", "InputCounts", "find_custom_gradients", "grad_upstream_uses",
           "input_counts", "lint_source"]


@dataclass(frozen=True)
class InputCounts:
    """How many positional inputs a definition is given and expects, as the source says."""

    calls: frozenset[int]  # positional arguments the file's own calls pass
    returned: frozenset[int]  # gradients grad returns (empty: not known)
    # positional arguments calls elsewhere in the project pass (structures left out); matched by
    # name, so a common name brings others' calls too
    project_calls: frozenset[int] = frozenset()


def input_counts(source: str, path: str, qualname: str, settings: Settings | None = None,
                 contexts: TraceContexts | None = None) -> InputCounts:
    """What the calls of the definition ``qualname`` pass (the file's own, then the project's
    other modules through ``contexts``) and what its grad returns: which of its parameters with
    defaults TensorFlow counts as inputs where the project calls it."""
    settings = settings or Settings()
    prepared = prepare(source, path, settings.markers(), reduce=False)
    if not isinstance(prepared, Prepared):
        return InputCounts(frozenset(), frozenset())
    try:
        ctx = build_context(prepared, path, settings)
    except RecursionError:
        return InputCounts(frozenset(), frozenset())
    record = next((r for r in ctx.records if r.qualname == qualname), None)
    if record is None:
        return InputCounts(frozenset(), frozenset())
    index = ctx.index
    expected = expected_inputs(record, index)
    calls = frozenset(expected.exact) if expected is not None else frozenset()
    project: frozenset[int] = frozenset()
    if contexts is not None:
        here = os.path.abspath(path)
        project = frozenset(c.positional for where, c in contexts.calls(path, qualname)
                            if not c.structured and where != here)
    returned: set[int] = set()
    for grad in record.grads:
        counter = grad_counter(record, grad, index)
        for site in grad.returns:
            counts = returned_counts(grad, site, counter, variables_branch(index, grad, site.node))
            if counts is None:
                return InputCounts(calls, frozenset(), project)
            returned |= counts
    return InputCounts(calls, frozenset(returned), project)


def grad_upstream_uses(source: str, path: str, line: int, name: str, settings: Settings | None = None
                       ) -> frozenset[str]:
    """What the grad function ``name`` (a def's name, or ``<lambda>``) whose code starts on ``line``
    (a code object's ``co_firstlineno``) does with its upstream on purpose: ``CLIP``, ``NORMALISE``.

    Looked up among the grad functions of the file's custom-gradient records first, then among
    any function of that name spanning ``line`` (a grad the model cannot tie to its forward: one a
    helper returns, or a ``functools.partial``). Empty when neither is found."""
    settings = settings or Settings()
    prepared = prepare(source, path, settings.markers() + BUILDER_MARKERS, reduce=False)
    if not isinstance(prepared, Prepared):
        return frozenset()
    try:
        ctx = build_context(prepared, path, settings)
    except RecursionError:
        return frozenset()
    index = ctx.index
    grads = [g.node for r in ctx.records for g in r.grads if g.node is not None]
    others = [n for n in index.nodes if type(n) is cst.FunctionDef or type(n) is cst.Lambda]
    for candidates in (grads, others):
        found = _innermost(index, candidates, line, name)
        if found is not None:
            return upstream_uses(index, found)
    return frozenset()


def _innermost(index: FileIndex, nodes: list[FuncNode], line: int, name: str) -> FuncNode | None:
    best: tuple[int, FuncNode] | None = None
    for node in nodes:
        own = node.name.value if type(node) is cst.FunctionDef else "<lambda>"
        if own != name:
            continue
        start = index.position(node)[0]
        if type(node) is cst.FunctionDef and node.decorators:
            start = min(start, index.position(node.decorators[0])[0])
        if start <= line <= index.end_position(node)[0] and (best is None or start > best[0]):
            best = (start, node)
    return None if best is None else best[1]


def _builder_calls(index: FileIndex) -> list[Definition]:
    found = []
    for node in index.nodes:
        if type(node) is not cst.Call or not node.args or node.args[0].keyword is not None:
            continue
        if type(node.func) not in (cst.Name, cst.Attribute):
            continue
        if not index.qualnames(node.func) & CUSTOM_GRADIENT_BUILDERS:
            continue
        arg = node.args[0].value
        parent = index.parent(node)
        target = parent.targets[0].target if type(parent) is cst.Assign and len(parent.targets) == 1 else None
        name = (target.value if type(target) is cst.Name
                else cst.helpers.get_full_name_for_node(arg) or "<lambda>")
        nested = index.owner(node) is not None
        inputs: tuple[str, ...] = ()
        varargs = False
        if type(arg) is cst.Lambda:
            params = arg.params
            inputs = tuple(p.name.value for p in (*params.posonly_params, *params.params))
            varargs = type(params.star_arg) is cst.Param
            kind = "lambda" if nested else "call"
        else:
            kind = "nested" if nested else "call"
        line, column = index.position(node)
        found.append(Definition(name, qualname(index, node, name), line, column, kind, inputs, varargs))
    return found

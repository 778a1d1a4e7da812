"""Answers to leads: the questions a rule left about a function another module of the project
defines (``Finding.lead``; where the helper is: ``cg_lint/project/leads.py``).

Each kind of lead is answered by the rule's own check on the helper's body:

- ``body`` (CG009, CG010): the forward or grad calls ``helper(x, ...)`` with tensors; the rule's
  ``problems`` runs on the helper's body with the parameters those tensors arrive in. AutoGraph does
  not convert a plain function called from an unconverted body, so Python on a tensor breaks there
  the same; a helper decorated with ``tf.function`` is converted and fine, and one with any other
  decorator is unknown.
- ``count`` (CG003): grad returns ``helper(...)``; the count is every return of the helper's body
  (through the helpers of its own module), and the lead's expected inputs decide.

The answer is a finding at the call site, naming the helper and the line in it, or None (no bug,
or not known: an unanswered lead is never shown).
"""

from __future__ import annotations

import ast
import json
from dataclasses import replace
from typing import Any

import libcst as cst

from cg_lint.analyses.contexts import asserts_eager
from cg_lint.analyses.counting import helper_returns
from cg_lint.analyses.leaves import Counter
from cg_lint.analyses.tensors import Tensors, statement_of
from cg_lint.findings import Finding
from cg_lint.prefilter.prepared import Prepared, prepare
from cg_lint.project.leads import Helper, find_helper
from cg_lint.project.modules import Project
from cg_lint.rules import RULES_BY_CODE
from cg_lint.rules.base import LintContext, plural
from cg_lint.rules.graph_mode.graph_mode_shared import GRAPH
from cg_lint.syntax.index import FileIndex

_WHO = "\x00who\x00"  # where the rule's message names the body; replaced once the line is known


def answer(finding: Finding, project: Project) -> Finding | None:
    """The finding a lead comes to, or None."""
    try:
        question = json.loads(finding.lead or "")
    except ValueError:
        return None
    if not isinstance(question, dict) or not isinstance(question.get("name"), str):
        return None
    helper = find_helper(project, finding.path, question["name"])
    if helper is None or helper.func.decorator_list:
        return None  # not a plain function of the project (a tf.function is converted: fine)
    ctx = _helper_context(project, helper)
    if ctx is None:
        return None
    func = next((s for s in ctx.index.module.body
                 if type(s) is cst.FunctionDef and s.name.value == helper.func.name), None)
    if func is None:
        return None
    kind = question.get("kind")
    if kind == "body":
        return _body(finding, question, project, helper, ctx, func)
    if kind == "count":
        return _count(finding, question, project, helper, ctx, func)
    return None


def _body(finding: Finding, question: dict[str, Any], project: Project, helper: Helper, ctx: LintContext,
          func: cst.FunctionDef) -> Finding | None:
    problems = getattr(RULES_BY_CODE.get(finding.code), "problems", None)
    params = _tensor_params(helper.func, question.get("args", []), question.get("keywords", []))
    if problems is None or not params or asserts_eager(ctx.index, func):
        return None  # a helper that asserts eager execution first is written for eager calls
    facts = Tensors(ctx.index, None, roots={id(ctx.index.env_for(func)): params}, depth=1)  # type: ignore[arg-type]
    for node, message in problems(ctx, func, _WHO, facts, question.get("autograph")):
        line = ctx.position(statement_of(ctx.index, node))[0]
        who = (f"helper '{helper.func.name}' ({project.relative(helper.path)}, line {line}; "
               f"called by {question.get('who', 'the custom gradient')} here)")
        text = message.replace(_WHO, who, 1).replace(GRAPH, GRAPH + str(question.get("note") or ""), 1)
        return replace(finding, message=text, lead=None)
    return None


def _count(finding: Finding, question: dict[str, Any], project: Project, helper: Helper, ctx: LintContext,
           func: cst.FunctionDef) -> Finding | None:
    """Every return of the helper gives the same count, and the expected inputs reject it."""
    accepts = question.get("accepts")
    if not isinstance(accepts, list) or len(accepts) != 2:
        return None
    low, high = accepts
    found = helper_returns(ctx.index)(func)
    if found is None or not found[1]:
        return None
    env, returns = found
    counter = Counter(env, ctx.index.qualnames, helpers=helper_returns(ctx.index))
    counts = {counter.count(r) for r in returns}
    if len(counts) != 1 or None in counts:
        return None
    got = counts.pop()
    exact = question.get("exact") or []
    if (exact and got in exact) or (not exact and got >= low and (high is None or got <= high)):  # type: ignore[operator]
        return None
    line = ctx.position(statement_of(ctx.index, returns[0]))[0]
    text = (f"grad of '{question.get('record')}' returns {plural(got, 'gradient')} through helper "  # type: ignore[arg-type]
            f"'{helper.func.name}' ({project.relative(helper.path)}, line {line}) but {question.get('expected')}")
    return replace(finding, message=text, lead=None)


def _tensor_params(func: ast.FunctionDef, args: list[Any], keywords: list[Any]) -> set[str]:
    """The helper's parameters the call passes a tensor for (positions, then keywords)."""
    positional = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
    named = {a.arg for a in func.args.args} | {a.arg for a in func.args.kwonlyargs}
    found = {positional[i] for i in args if isinstance(i, int) and 0 <= i < len(positional)}
    found |= {k for k in keywords if isinstance(k, str) and k in named}
    return found


def _helper_context(project: Project, helper: Helper) -> LintContext | None:
    """The helper's module, parsed as its imports and the helper alone (every other line blanked,
    so lines and columns are the file's): what the rule's check reads. Kept per module text."""
    key = ("leads-cst", helper.path, helper.func.name)
    cached = project.memo.get(key)
    if cached is not None and cached[0] is helper.text:
        return cached[1]  # type: ignore[return-value]
    lines = helper.text.splitlines(keepends=True)
    keep: set[int] = set()
    for stmt in helper.imports:
        if stmt.col_offset == 0 and stmt.end_lineno is not None:
            keep.update(range(stmt.lineno, stmt.end_lineno + 1))
    if helper.func.end_lineno is not None:
        keep.update(range(helper.func.lineno, helper.func.end_lineno + 1))
    text = "".join(line if number in keep else "\n" for number, line in enumerate(lines, 1))
    ctx: LintContext | None = None
    try:
        prepared = prepare(text, helper.path, (helper.func.name,), gates=False, reduce=False)
        if isinstance(prepared, Prepared):
            ctx = LintContext(helper.path, FileIndex(prepared, helper.path), [])
    except RecursionError:
        ctx = None
    project.memo[key] = (helper.text, ctx)
    return ctx

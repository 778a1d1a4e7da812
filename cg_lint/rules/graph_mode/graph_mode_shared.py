"""What the graph-mode rules share: the tensor facts of a custom gradient, the bodies that can run
under tf.function, and one finding per statement."""

from __future__ import annotations

import json

import libcst as cst

from cg_lint.analyses.contexts import asserts_eager, context_of
from cg_lint.analyses.tensors import Tensors, body_nodes, python_value_uses, statement_of, tensor_arguments
from cg_lint.analyses.untraceable import leaves_tensorflow
from cg_lint.findings import Finding
from cg_lint.model.bodies import all_bodies
from cg_lint.project import UNTRACEABLE
from cg_lint.model.records import CustomGradient, FuncNode
from cg_lint.rules.base import LintContext, Rule
from cg_lint.rules.leads_left import imported_name, project_imports

GRAPH = "under tf.function"
__all__ = ["GRAPH", "UNTRACEABLE", "Reporter", "converted", "graph_bodies", "graph_tensors", "helper_bodies",
           "helper_leads", "python_values"]


def python_values(ctx: LintContext, record: CustomGradient) -> dict[str, list[tuple[cst.CSTNode, str]]]:
    key = ("python-values", id(record))
    if key not in ctx.cache:
        ctx.cache[key] = python_value_uses(ctx.index, record)
    return ctx.cache[key]  # type: ignore[return-value]


def graph_tensors(ctx: LintContext, record: CustomGradient) -> Tensors:
    """Tensor facts for the graph-mode rules (shared); configuration inputs are CG012's business."""
    key = ("tensors", id(record))
    if key not in ctx.cache:
        ctx.cache[key] = Tensors(ctx.index, record, exclude=set(python_values(ctx, record)))
    return ctx.cache[key]  # type: ignore[return-value]




def graph_bodies(ctx: LintContext, record: CustomGradient) -> list[tuple[FuncNode, str]]:
    """The bodies (nested functions included) that can run under tf.function: none when the custom
    gradient only ever runs eagerly (cg_lint.analyses.contexts), or leaves TensorFlow on purpose
    (one finding on the definition says so: cg_lint.analyses.untraceable), and not those asserting
    eager execution."""
    if context_of(ctx.index, record).eager_only or leaves_tensorflow(ctx.index, record):
        return []
    return [(b.func, b.who) for b in all_bodies(ctx.index, record)
            if not asserts_eager(ctx.index, b.top) and not asserts_eager(ctx.index, b.func)]


def converted(ctx: LintContext, record: CustomGradient) -> str | None:
    """Why AutoGraph converts the definition's bodies (it is defined inside a function a
    tf.function converts: tests/tf_behaviour/README.md); then Python control flow on tensors,
    range(), int(), float() and len() work, and only bool(), assert, .numpy() and NumPy fail."""
    return context_of(ctx.index, record).converted


def helper_bodies(ctx: LintContext, record: CustomGradient) -> list[tuple[cst.FunctionDef, str, Tensors]]:
    """Plain functions of this file that the bodies call with tensors (not ``tf.function``s, which
    AutoGraph converts), with the tensor facts of their parameters: Python on a tensor breaks there
    just the same. One call deep."""
    key = ("helper-bodies", id(record))
    if key not in ctx.cache:
        tensors = graph_tensors(ctx, record)
        found: dict[tuple[int, frozenset[str]], tuple[cst.FunctionDef, str, Tensors]] = {}
        own = {id(record.node), *(id(g.node) for g in record.grads)}
        for func, who in graph_bodies(ctx, record):
            if id(func) not in own:
                continue  # a nested function's parameters may be loop structures (tf.while_loop)
            for node in body_nodes(func, ctx.index):
                if type(node) is not cst.Call:
                    continue
                if type(node.func) is cst.Name:
                    helper = tensors.helper(node.func)
                    if helper is None or ctx.index.enclosing(helper, (cst.ClassDef,)):
                        continue
                else:
                    helper = _self_method(ctx, record, node.func)
                if helper is None or helper.decorators:
                    continue
                params = frozenset(tensor_arguments(helper, node, tensors, single=True,
                                                    skip_first=type(node.func) is cst.Attribute))
                if not params or (id(helper), params) in found:
                    continue
                inner = Tensors(ctx.index, record, roots={id(ctx.index.env_for(helper)): set(params)}, depth=1)
                line = ctx.position(node)[0]
                found[(id(helper), params)] = (helper, f"helper '{helper.name.value}' (called by {who} at line "
                                                       f"{line})", inner)
        ctx.cache[key] = list(found.values())
    return ctx.cache[key]  # type: ignore[return-value]


def _self_method(ctx: LintContext, record: CustomGradient, func: cst.BaseExpression) -> cst.FunctionDef | None:
    """``self.name`` inside a method of the class the custom gradient is defined in: that method."""
    if type(func) is not cst.Attribute or type(func.value) is not cst.Name or func.value.value != "self":
        return None
    cls = record.class_node or ctx.index.enclosing(record.node, (cst.ClassDef,))
    if type(cls) is not cst.ClassDef or type(cls.body) is not cst.IndentedBlock:
        return None
    for stmt in cls.body.body:
        if type(stmt) is cst.FunctionDef and stmt.name.value == func.attr.value and id(stmt) not in {
                id(r.node) for r in ctx.records}:
            return stmt
    return None


def helper_leads(rule: Rule, ctx: LintContext, record: CustomGradient) -> list[Finding]:
    """Leads for the calls the bodies make, with tensors, of functions the file imports from
    elsewhere (``from .ops import safe_norm``): the helper's module is another file, so whether its
    body does Python on those tensors is answered outside this file's lint
    (``cg_lint/rules/lead_answers.py``). One lead per call statement and helper."""
    key = ("helper-leads", id(record))
    if key not in ctx.cache:
        ctx.cache[key] = _imported_calls(ctx, record)
    out = []
    for line, column, question in ctx.cache[key]:  # type: ignore[attr-defined]
        name = question["name"]
        # the note names a line of this file: in the message, a cached result is moved with care
        out.append(Finding(ctx.path, line, column, rule.code,
                           f"lead: does '{name}' do Python on a tensor?{question['note']}",
                           record.qualname, lead=json.dumps(question, sort_keys=True)))
    return out


def _imported_calls(ctx: LintContext, record: CustomGradient) -> list[tuple[int, int, dict[str, object]]]:
    if not project_imports(ctx):
        return []  # the file imports only libraries: nothing to ask
    tensors = graph_tensors(ctx, record)
    autograph = converted(ctx, record)
    note = context_of(ctx.index, record).traced_note()
    seen: set[tuple[int, str]] = set()
    found: list[tuple[int, int, dict[str, object]]] = []
    for func, who in graph_bodies(ctx, record):
        for node in body_nodes(func, ctx.index):
            if type(node) is not cst.Call or any(a.star for a in node.args):
                continue
            name = imported_name(ctx, node.func)
            if name is None:
                continue
            args = [i for i, a in enumerate(a for a in node.args if a.keyword is None)
                    if tensors.is_single_tensor(a.value)]
            keywords = sorted(a.keyword.value for a in node.args
                              if a.keyword is not None and tensors.is_single_tensor(a.value))
            stmt = statement_of(ctx.index, node)
            if not (args or keywords) or (id(stmt), name) in seen:
                continue
            seen.add((id(stmt), name))
            line, column = ctx.position(stmt)
            found.append((line, column, {"kind": "body", "name": name, "args": args, "keywords": keywords,
                                         "who": who, "autograph": autograph, "note": note}))
    return found


class Reporter:
    """One finding per statement and rule: the first problem on a line is the one to fix."""

    def __init__(self, rule: Rule, ctx: LintContext, record: CustomGradient) -> None:
        self.rule, self.ctx, self.record = rule, ctx, record
        self.seen: set[int] = set()

    def __call__(self, node: cst.CSTNode, message: str) -> Finding | None:
        stmt = statement_of(self.ctx.index, node)
        if id(stmt) in self.seen:
            return None
        self.seen.add(id(stmt))
        line, column = self.ctx.position(stmt)
        note = context_of(self.ctx.index, self.record).traced_note()
        if note:  # the file shows the graph mode the message is about
            message = message.replace(GRAPH, GRAPH + note, 1)
        return self.rule.finding(self.ctx, line, column, message, self.record.qualname)

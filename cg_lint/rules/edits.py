"""Edits that rules attach to their fixes: replace a node's text, insert before or after it.

Positions are libcst's: 1-based lines, 1-based columns counted in characters, end exclusive.
"""

from __future__ import annotations

import libcst as cst

from cg_lint.findings import Edit
from cg_lint.syntax.index import FileIndex


def node_code(node: cst.CSTNode) -> str:
    """Source text of a (possibly new) node."""
    return cst.Module(body=[]).code_for_node(node)


def replace_node(index: FileIndex, node: cst.CSTNode, replacement: str | cst.CSTNode) -> Edit:
    """An edit replacing ``node``'s text; ``index`` is the rule context's ``ctx.index``."""
    (l1, c1), (l2, c2) = index.position(node), index.end_position(node)
    text = replacement if isinstance(replacement, str) else node_code(replacement)
    return Edit(l1, c1, l2, c2, text)


def insert_before(index: FileIndex, node: cst.CSTNode, text: str) -> Edit:
    line, column = index.position(node)
    return Edit(line, column, line, column, text)


def insert_after(index: FileIndex, node: cst.CSTNode, text: str) -> Edit:
    line, column = index.end_position(node)
    return Edit(line, column, line, column, text)

"""Which findings the project around a file decides, without importing the search (the flake8
plugin asks this on every result-cache hit)."""

from __future__ import annotations

from cg_lint.codes import CODES


def graph_only(code: str) -> bool:
    """A code whose failure needs tracing (CG011's vector tf.cond predicate fails eagerly too;
    CG008 needs it when its message has no eager half)."""
    entry = CODES.get(code)
    return bool(entry is not None and entry.graph_only and code != "CG011") or code == "CG008"


def project_facts_matter(code: str) -> bool:
    """Findings the project around the file decides: graph mode (is it traced?) and CG003 (how
    do the project's calls count?)."""
    return graph_only(code) or code == "CG003"

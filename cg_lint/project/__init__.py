"""Facts about the project around a file that no single file shows: which custom gradients can be
traced (``trace``), read from the project's modules (``modules``, ``scan``) without importing them,
and what that decides for a file's findings (``filtering``).

The package itself is cheap to import (the rules read its phrases); the search is imported the
first time a front end asks for it.
"""

from __future__ import annotations

from typing import Any

from cg_lint.project.phrases import EAGER_HALF, UNTRACEABLE

_LAZY = ("TRACE_CONTEXTS", "TraceContexts", "Verdict", "graph_only", "in_context", "needs_tracing",
         "project_facts_matter")
__all__ = ["EAGER_HALF", "UNTRACEABLE", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from cg_lint.project import filtering

        return getattr(filtering, name)
    raise AttributeError(f"module 'cg_lint.project' has no attribute {name!r}")

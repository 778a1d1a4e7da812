"""Facts about the project around a file that no single file shows: which custom gradients can be
traced (``trace``), read from the project's modules (``modules``, ``scan``) without importing them.

The graph-mode rules report what breaks under ``tf.function`` from the file alone; ``apply`` keeps
such a finding only where the project can trace the definition (``trace-context = "auto"``), keeps
all (``"always"``) or none (``"never"``).
"""

from __future__ import annotations

from dataclasses import replace

from cg_lint.codes import CODES
from cg_lint.config import TRACE_CONTEXTS
from cg_lint.findings import FileResult, Finding
from cg_lint.project.trace import TraceContexts, Verdict

# a note the rules already add when the file itself shows the tf.function call
_FILE_NOTES = ("(it is called under tf.function", "(this call runs under tf.function")

__all__ = ["TRACE_CONTEXTS", "TraceContexts", "Verdict", "apply", "graph_only", "in_context"]


def graph_only(code: str) -> bool:
    """A code whose failure needs tracing. CG011's vector tf.cond predicate fails eagerly too."""
    entry = CODES.get(code)
    return bool(entry is not None and entry.graph_only and code != "CG011")


def apply(results: list[FileResult], mode: str, contexts: TraceContexts | None = None) -> list[FileResult]:
    """The results with each graph-mode finding kept or dropped by the trace context."""
    if mode == "always" or not any(graph_only(f.code) for r in results for f in r.findings):
        return results
    contexts = contexts or TraceContexts()
    return [replace(r, findings=in_context(r.findings, mode, contexts)) for r in results]


def in_context(findings: list[Finding], mode: str, contexts: TraceContexts | None = None) -> list[Finding]:
    if mode == "always" or not any(graph_only(f.code) for f in findings):
        return findings
    contexts = contexts or TraceContexts()
    return [g for g in (_decide(f, mode, contexts) for f in findings) if g is not None]


def _decide(finding: Finding, mode: str, contexts: TraceContexts) -> Finding | None:
    if not graph_only(finding.code):
        return finding
    if mode == "never" or finding.function is None:
        return None if mode == "never" else finding
    verdict = contexts.verdict(finding.path, finding.function)
    if not verdict.traced:
        return None
    if any(note in finding.message for note in _FILE_NOTES):
        return finding
    return replace(finding, message=f"{finding.message} ({verdict.why})")

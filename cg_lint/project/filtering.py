"""The graph-mode rules report what breaks under ``tf.function`` from the file alone; ``in_context`` keeps
such a finding only where the project can trace the definition (``trace-context = "auto"``), keeps
all (``"always"``) or none (``"never"``), and checks a count from the signature against the
project's calls."""

from __future__ import annotations

import re
from dataclasses import replace

from cg_lint.config import TRACE_CONTEXTS
from cg_lint.findings import Finding
from cg_lint.project.decided import graph_only, project_facts_matter
from cg_lint.project.phrases import EAGER_HALF, UNTRACEABLE
from cg_lint.project.trace import TraceContexts, Verdict

# a note the rules already add when the file itself shows the tf.function call
_FILE_NOTES = ("(it is called under tf.function", "(this call runs under tf.function")

__all__ = ["TRACE_CONTEXTS", "TraceContexts", "Verdict", "graph_only", "in_context", "needs_tracing",
           "project_facts_matter"]


def needs_tracing(finding: Finding) -> bool:
    return graph_only(finding.code) and (finding.code != "CG008" or EAGER_HALF not in finding.message)


def in_context(findings: list[Finding], mode: str, contexts: TraceContexts | None = None) -> list[Finding]:
    if not any(project_facts_matter(f.code) for f in findings):
        return findings
    contexts = contexts or TraceContexts()
    return [g for g in (_decide(f, mode, contexts) for f in findings) if g is not None]


def _decide(finding: Finding, mode: str, contexts: TraceContexts) -> Finding | None:
    if finding.code == "CG003" and finding.function is not None:
        return _counted_by_callers(finding, contexts)
    if not needs_tracing(finding) or mode == "always":
        return finding
    if mode == "never" or finding.function is None:
        return None if mode == "never" else finding
    # a definition that leaves TensorFlow on purpose matters only where the project itself traces
    # it: a library's users know what they call
    verdict = contexts.verdict(finding.path, finding.function, libraries=UNTRACEABLE not in finding.message)
    if not verdict.traced:
        return None
    if any(note in finding.message for note in _FILE_NOTES):
        return finding
    return replace(finding, message=f"{finding.message} ({verdict.why})")


_RETURNED = re.compile(r"returns (\d+) gradients?\b")


def _counted_by_callers(finding: Finding, contexts: TraceContexts) -> Finding | None:
    """A count from the signature alone (no call in the file) meets the project's calls: a call
    that passes a structure TF flattens, or exactly as many inputs as grad returns, makes the
    author right by TF's counting."""
    returned = _RETURNED.search(finding.message)
    if returned is None or " takes " not in finding.message:
        return finding  # counted from the file's own calls: the rule saw them
    calls = contexts.calls(finding.path, finding.function)  # type: ignore[arg-type]
    if any(c.structured or c.positional == int(returned.group(1)) for _, c in calls):
        return None
    return finding

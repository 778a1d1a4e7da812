"""The leads of a run answered, before the trace context decides (every front end calls this).

A lead (``Finding.lead``) is a question a rule left about a helper another module of the project
defines; a file's result, leads included, is cached by the file's own text, so the answer is found
here, on every run, from the project as it is now (``cg_lint/project/leads.py`` finds the helper,
``cg_lint/rules/lead_answers.py`` runs the rule's check on it). A lead that finds a bug becomes a
finding at the call site; any other is dropped: an unanswered lead is never shown.

Cheap to import: a run without leads imports nothing more.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cg_lint.findings import Finding
    from cg_lint.project.trace import TraceContexts


def answer_leads(findings: list[Finding], contexts: TraceContexts) -> list[Finding]:
    """``findings`` with each lead replaced by its answer, or left out. ``contexts`` gives the
    projects (their texts, an editor's buffers included) the trace context reads too."""
    if not any(f.lead is not None for f in findings):
        return findings
    from cg_lint.rules.lead_answers import answer

    out: list[Finding] = []
    seen: set[tuple[int, int, str, str]] = set()
    for f in findings:
        if f.lead is not None:
            try:
                got = answer(f, contexts.project_of(f.path))
            except Exception:  # never a traceback; unknown stays quiet
                got = None
            if got is None:
                continue
            f = got
        key = (f.line, f.column, f.code, f.message)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


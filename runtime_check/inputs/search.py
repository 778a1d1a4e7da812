"""The bounded search: try candidates eagerly (forward only), repair them from the errors, keep the
ones that run without broadcasting a parameter.

Order: call sites with literal shapes (in the module and in test files that call the function),
then the source's facts with each uniform shape for parameters the source says nothing about, each
followed at once by the repairs its error suggests. Issues the checked decorator records while
searching are discarded: the real checks run afterwards, eagerly and traced, on what was found.
"""

from __future__ import annotations

import ast
import os
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from collections.abc import Callable, Sequence

from .assign import Candidate, describe, from_call_site, initial, key, materialize, with_dtype
from .broadcast import broadcast_parameters, widened
from .hints import ArgSpec, Facts, call_sites, facts_for, find_function
from .repair import _with_shape, repairs

BUDGET = 40  # forward calls per function
WANT = 3  # accepted candidates (plus the first one in float64)


class NotReached(Exception):
    """The call ran but reached no custom gradient, or returned nothing to differentiate."""


class Contract(Exception):
    """The call failed on the custom-gradient contract itself: any input shows the defect."""


@dataclass
class Observation:
    outputs: list[tuple[int, ...]]
    variables: list[tuple[int, ...]]


@dataclass
class Discovery:
    accepted: list[Candidate] = field(default_factory=list)
    reason: str = ""
    tries: int = 0
    broadcast: bool = False  # only inputs that broadcast a parameter were found


def search(attempt: Callable[[list[Any]], Observation], names: Sequence[str], facts: Facts,  # noqa: C901 (a table of cases)
           sites: list[list[ArgSpec | None]], budget: int = BUDGET, want: int = WANT,
           fatal: tuple[type[BaseException], ...] = ()) -> Discovery:
    """``fatal`` exceptions (the entry cannot be called at all) end the search and propagate."""
    names = list(names)
    found = Discovery()
    from_sites: list[Candidate] = []
    for site in sites:
        candidate = from_call_site(facts, site)
        if candidate is not None and key(candidate) not in {key(c) for c in from_sites}:
            from_sites.append(candidate)
    uniform = [c for c in initial(facts, []) if key(c) not in {key(s) for s in from_sites}]
    seen: set[tuple[Any, ...]] = set()
    fallback: list[Candidate] = []
    reasons: list[str] = []
    for group in (from_sites, uniform):
        queue: deque[tuple[Candidate, bool]] = deque((c, True) for c in group)
        while queue and found.tries < budget and len(found.accepted) < want:
            candidate, direct = queue.popleft()
            if key(candidate) in seen:
                continue
            seen.add(key(candidate))
            found.tries += 1
            try:
                observed = attempt(materialize(candidate))
            except Contract:
                found.accepted.append(candidate)
                break
            except fatal:
                raise
            except NotReached as why:
                reasons.append(str(why))
                continue
            except Exception as exc:  # the forward rejected it: what does the error ask for?
                fixes, reason = repairs(str(exc), candidate)
                reasons.append(f"the forward needs {reason}" if fixes or reason != "an error unrelated to shapes"
                               else f"the forward raised {type(exc).__name__}")
                queue.extendleft((fix, False) for fix in reversed(fixes))
                continue
            tensors = {n: s.shape for n, s in zip(names, candidate) if s.kind == "tensor"}
            expanded = broadcast_parameters(tensors, observed.outputs, observed.variables)
            if expanded:
                fallback.append(candidate)
                for name in expanded:
                    index = names.index(name)
                    wider = widened(candidate[index].shape, observed.outputs, observed.variables)
                    queue.extendleft((_with_shape(candidate, index, s), False) for s in reversed(wider))
                continue
            # Beyond the first, only inputs that ran as written: repairs of later candidates would
            # re-derive the first one's structure with arbitrary extra dimensions.
            if direct or not found.accepted or _batched(found.accepted[0], candidate):
                found.accepted.append(candidate)
        if found.accepted:
            break
    if not found.accepted and fallback:
        found.accepted, found.broadcast = fallback[:1], True
    if found.accepted:
        first = found.accepted[0]
        wide = with_dtype(first, "float64")
        if key(wide) != key(first) and key(wide) not in seen:
            try:
                attempt(materialize(wide))
                found.accepted.append(wide)
            except Exception:
                pass
    elif reasons:
        found.reason = _summary(reasons, found.tries)
    else:
        found.reason = "no candidate inputs"
    return found


def _batched(first: Candidate, later: Candidate) -> bool:
    """``later`` is ``first`` with the same number of extra dimensions on every tensor parameter."""
    deltas = {len(b.shape) - len(a.shape) for a, b in zip(first, later) if a.kind == "tensor" and b.kind == "tensor"}
    return len(deltas) == 1 and deltas.pop() > 0


def _summary(reasons: list[str], tries: int) -> str:
    counted: dict[str, int] = {}
    for reason in reasons:
        counted[reason] = counted.get(reason, 0) + 1
    top = max(counted, key=lambda r: (counted[r], -reasons.index(r)))
    return f"{top} (tried {tries} input sets)"


# -- facts and call sites for one entry --------------------------------------------------------------


def _parse(path: str) -> ast.Module | None:
    try:
        return ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None


def test_files(path: str, name: str, limit: int = 40) -> list[str]:
    """Test modules near ``path`` that mention ``name`` (its own folder, tests/ folders up to 3 levels)."""
    folder = Path(path).resolve().parent
    found: list[str] = []
    roots = [folder] + [p / d for p in [folder, *list(folder.parents)[:3]] for d in ("tests", "test")]
    for root in roots:
        if not root.is_dir():
            continue
        for current, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("__pycache__", "node_modules")]
            for file in files:
                if not (file.startswith("test_") or file.endswith("_test.py")) or not file.endswith(".py"):
                    continue
                candidate = os.path.join(current, file)
                if candidate in found:
                    continue
                try:
                    if name in Path(candidate).read_text(encoding="utf-8", errors="replace"):
                        found.append(candidate)
                except OSError:
                    continue
                if len(found) >= limit:
                    return found
            if root == folder:
                break  # the module's own folder: not recursively
    return found


def facts_and_sites(path: str | None, qualname: str, names: list[str], callee: str | None
                    ) -> tuple[Facts, list[list[ArgSpec | None]]]:
    tree = _parse(path) if path else None
    function = find_function(tree, qualname) if tree is not None else None
    facts = facts_for(function, names, tree)
    sites: list[list[ArgSpec | None]] = []
    if tree is not None and callee:
        sites = call_sites(tree, callee, len(names))
        for test in test_files(path, callee) if path else []:
            if os.path.abspath(test) == os.path.abspath(path or ""):
                continue
            test_tree = _parse(test)
            if test_tree is not None:
                sites += [s for s in call_sites(test_tree, callee, len(names)) if s not in sites]
    return facts, sites[:6]


def label(names: Sequence[str], candidate: Candidate) -> str:
    return describe(names, candidate)

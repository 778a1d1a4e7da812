"""The bounded search: try candidates eagerly (forward only), repair them from the errors, keep the
ones that run without broadcasting a parameter; then try each later parameter as a bias or
per-channel scale is used (fewer leading dimensions, broadcast over the first tensor parameter).

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

from ..paths import shown_path
from .assign import Candidate, describe, from_call_site, initial, key, materialize, with_dtype
from .broadcast import applied_shapes, broadcast_parameters, widened
from .channels import per_channel
from .hints import ArgSpec, Facts, call_sites, facts_for, find_function
from .repair import _with_shape, repairs

BUDGET = 40  # forward calls per function
WANT = 3  # accepted candidates (plus the first one in float64)
APPLIED = 6  # at most this many forward calls (with their gradients) for the variants


class NotReached(Exception):
    """The call ran but reached no custom gradient, or returned nothing to differentiate."""


class Contract(Exception):
    """The call failed on the custom-gradient contract itself: any input shows the defect."""


@dataclass
class Observation:
    outputs: list[tuple[int, ...]]
    variables: list[tuple[int, ...]]
    # per argument, when asked for: whether its gradient has its shape (None: no gradient)
    fits: list[bool | None] | None = None


@dataclass
class Discovery:
    accepted: list[Candidate] = field(default_factory=list)
    reason: str = ""
    tries: int = 0
    broadcast: bool = False  # only inputs that broadcast a parameter were found
    # accepted inputs under which a later parameter, with fewer leading dimensions, is broadcast
    # over the others as a bias or scale is, and the outputs keep their shapes
    applied: list[Candidate] = field(default_factory=list)
    # how each candidate (by its key) was chosen, as findings say it
    origins: dict[tuple[Any, ...], str] = field(default_factory=dict)

    def origin(self, candidate: Candidate) -> str:
        return self.origins.get(key(candidate), "guessed")


FITTED = ", fitted to the forward's errors"


def hints_origin(facts: Facts) -> str:
    """'from the source's hints (x: matmul(); w: einsum 'ij,jk')', or 'guessed' when it has none."""
    said = [f"{n}: {facts.why[n]}" for n in facts.names if n in facts.why]
    if not said:
        return "guessed"
    shown = "; ".join(said[:3]) + (f"; +{len(said) - 3} more" if len(said) > 3 else "")
    return f"from the source's hints ({shown})"


def search(attempt: Callable[[list[Any]], Observation], names: Sequence[str], facts: Facts,  # noqa: C901 (a table of cases)
           sites: list[list[ArgSpec | None]], budget: int = BUDGET, want: int = WANT,
           fatal: tuple[type[BaseException], ...] = (), site_origins: Sequence[str] = ()) -> Discovery:
    """``fatal`` exceptions (the entry cannot be called at all) end the search and propagate.
    ``site_origins``: per call site, where it is ('from the call at ops.py:12')."""
    names = list(names)
    found = Discovery()
    origins = found.origins
    from_sites: list[Candidate] = []
    for number, site in enumerate(sites):
        candidate = from_call_site(facts, site)
        if candidate is not None and key(candidate) not in {key(c) for c in from_sites}:
            from_sites.append(candidate)
            origins[key(candidate)] = site_origins[number] if number < len(site_origins) else "from a call site"
    uniform = [c for c in initial(facts, []) if key(c) not in {key(s) for s in from_sites}]
    for candidate in uniform:
        origins.setdefault(key(candidate), hints_origin(facts))

    def derived(parent: Candidate, child: Candidate, how: str) -> Candidate:
        base = origins.get(key(parent), "guessed")
        origins.setdefault(key(child), base if base.endswith(how) else base + how)
        return child
    seen: set[tuple[Any, ...]] = set()
    fallback: list[Candidate] = []
    reasons: list[str] = []
    observations: dict[tuple[Any, ...], Observation] = {}
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
                queue.extendleft((derived(candidate, fix, FITTED), False) for fix in reversed(fixes))
                continue
            tensors = {n: s.shape for n, s in zip(names, candidate) if s.kind == "tensor"}
            expanded = broadcast_parameters(tensors, observed.outputs, observed.variables)
            if expanded:
                fallback.append(candidate)
                for name in expanded:
                    index = names.index(name)
                    wider = widened(candidate[index].shape, observed.outputs, observed.variables)
                    queue.extendleft((derived(candidate, _with_shape(candidate, index, s), FITTED), False)
                                     for s in reversed(wider))
                continue
            # Beyond the first, only inputs that ran as written: repairs of later candidates would
            # re-derive the first one's structure with arbitrary extra dimensions.
            if direct or not found.accepted or _batched(found.accepted[0], candidate):
                found.accepted.append(candidate)
                observations[key(candidate)] = observed
        if found.accepted:
            break
    if not found.accepted and fallback:
        found.accepted, found.broadcast = fallback[:1], True
    if found.accepted:
        if not found.broadcast:
            applied, meant = _applied(attempt, names, found, observations, min(APPLIED, budget - found.tries), seen)
            if meant:  # the gradients fit only with those parameters broadcast: that is the use
                for candidate in meant:
                    derived(found.accepted[0], candidate, ", fitted to the gradient's shapes")
                found.accepted, found.applied = meant, []
            else:
                found.applied = applied
            for candidate in found.applied:
                derived(found.accepted[0], candidate, ", with a parameter applied as a bias or scale")
        first = found.accepted[0]
        wide = derived(first, with_dtype(first, "float64"), "")
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


def applied_variants(names: Sequence[str], base: Candidate, observed: Observation) -> list[Candidate]:
    """``base`` with one later floating parameter given fewer leading dimensions, where those are
    the trailing dimensions of a tensor it meets (another parameter, a captured variable, an output).

    The first tensor parameter is the data the others are applied to, as in TensorFlow's own ops
    (``bias_add(value, bias)``, ``x * scale``): it keeps its shape, so the outputs' shapes follow it.
    """
    tensors = [i for i, s in enumerate(base) if s.kind == "tensor" and s.dtype.startswith("float")]
    out: list[Candidate] = []
    for index in tensors[1:]:
        if base[index].spd:
            continue  # a positive-definite matrix is a matrix, not something broadcast
        met = [base[j].shape for j in tensors if j != index] + list(observed.variables) + list(observed.outputs)
        out += [_with_shape(base, index, shape) for shape in applied_shapes(base[index].shape, met)]
    return out


def _applied(attempt: Callable[..., Observation], names: Sequence[str], found: Discovery,  # noqa: C901
             observations: dict[tuple[Any, ...], Observation], calls: int, seen: set[tuple[Any, ...]]
             ) -> tuple[list[Candidate], list[Candidate]]:
    """Variants of the accepted input set of highest rank (see :func:`applied_variants`) that the
    forward accepts with the same output shapes and without expanding anything: the parameter was
    broadcast, not reduced, reshaped or rejected. At most ``calls`` forward calls.

    Returns (variants to check as well, inputs to check instead). A parameter whose gradient fits
    its shape only when it is broadcast (its gradient reduces over the leading dimensions, as
    ``tf.reduce_sum(dy * x, axis=0)`` does) shows what the function is written for: the inputs with
    every such parameter broadcast replace the full-shape ones, whose finding would describe a call
    the function is not meant for, and the other variants are taken from those inputs.
    """
    bases = [c for c in found.accepted if key(c) in observations]
    if not bases or calls <= 1:
        return [], []
    base = max(bases, key=lambda c: sum(len(s.shape) for s in c if s.kind == "tensor"))
    variants = [v for v in applied_variants(names, base, observations[key(base)]) if key(v) not in seen]
    if not variants:
        return [], []
    left = [calls]

    def run(candidate: Candidate) -> Observation | None:
        """The forward and gradient on ``candidate``, if it keeps the base's outputs and expands nothing."""
        if left[0] <= 0:
            return None
        left[0] -= 1
        found.tries += 1
        seen.add(key(candidate))
        try:
            result = attempt(materialize(candidate), gradients=True)
        except Exception:
            return None  # rejected (or the contract is broken for any input: the base shows that)
        tensors = {n: s.shape for n, s in zip(names, candidate) if s.kind == "tensor"}
        if result.outputs != observed.outputs or result.variables != observed.variables \
                or broadcast_parameters(tensors, result.outputs, result.variables):
            return None
        return result

    left[0] -= 1
    found.tries += 1
    try:
        observed = attempt(materialize(base), gradients=True)
    except Exception:
        return [], []
    applied: list[tuple[int, Candidate]] = []
    meant: dict[int, tuple[int, ...]] = {}
    for variant in variants:
        varied = next(i for i, (a, b) in enumerate(zip(base, variant)) if a != b)
        if varied in meant:
            continue
        result = run(variant)
        if result is None:
            continue
        if observed.fits and observed.fits[varied] is False and result.fits and result.fits[varied] is True:
            meant[varied] = variant[varied].shape
        else:
            applied.append((varied, variant))
    if not meant:
        return [v for _, v in applied], []
    combined = base
    for index, shape in meant.items():
        combined = _with_shape(combined, index, shape)
    if len(meant) > 1 and run(combined) is None:
        return [v for _, v in applied], []
    # the other variants, now from the inputs the function is written for
    rebased = [_with_shape(combined, i, v[i].shape) for i, v in applied if i not in meant]
    return [v for v in rebased if key(v) not in seen and run(v) is not None], [combined]


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
                    ) -> tuple[Facts, list[list[ArgSpec | None]], list[str]]:
    """The source's facts, up to six call sites' argument specs, and where each site is."""
    tree = _parse(path) if path else None
    function = find_function(tree, qualname) if tree is not None else None
    facts = facts_for(function, names, tree, finish=per_channel)
    sites: list[list[ArgSpec | None]] = []
    where: list[str] = []
    if tree is not None and callee and path:
        lines: list[int] = []
        sites = call_sites(tree, callee, len(names), lines)
        where = [f"from the call at {shown_path(path)}:{line}" for line in lines]
        for test in test_files(path, callee):
            if os.path.abspath(test) == os.path.abspath(path):
                continue
            test_tree = _parse(test)
            if test_tree is not None:
                lines = []
                for site, line in zip(call_sites(test_tree, callee, len(names), lines), lines):
                    if site not in sites:
                        sites.append(site)
                        where.append(f"from the test {_test_name(test_tree, test, line)}")
    return facts, sites[:6], where[:6]


def _test_name(tree: ast.Module, path: str, line: int) -> str:
    """'tests/test_ops.py::test_dense' (the innermost function around ``line``), or 'tests/test_ops.py:12'."""
    around = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
              and n.lineno <= line <= (n.end_lineno or n.lineno)]
    if not around:
        return f"{shown_path(path)}:{line}"
    innermost = max(around, key=lambda n: n.lineno)
    return f"{shown_path(path)}::{innermost.name} (line {line})"


def label(names: Sequence[str], candidate: Candidate) -> str:
    return describe(names, candidate)

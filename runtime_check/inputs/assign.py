"""Concrete per-parameter inputs (a *candidate*) from the facts the source gives.

A candidate is one :class:`Slot` per parameter: a float tensor, an integer index tensor, or a
Python value. Related dimensions (``matmul``'s inner dimension, einsum letters, a conv's
channels) share a size; unrelated ones get distinct sizes, so a mismatch shows in an error
message instead of passing by accident.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any
from collections.abc import Sequence

import numpy as np

from .hints import ArgSpec, Facts

SIZES = (2, 3, 4, 5, 6, 7, 8, 9, 10, 11)
EVEN_SIZES = (2, 4, 6, 8, 10, 12, 14, 16, 18, 20)  # for a function that strides or pools by 2
UNIFORM_SHAPES: tuple[tuple[int, ...], ...] = ((), (3,), (2, 3))
PYTHON_DEFAULTS = {"int": 2, "float": 0.5, "bool": False}
PYTHON_KINDS = frozenset({"int", "float", "bool", "callable", "shape"})  # not float tensors


@dataclass(frozen=True)
class Slot:
    kind: str  # tensor | index | shape | python
    shape: tuple[int, ...] = ()
    dtype: str = "float32"
    value: Any = None
    spd: bool = False
    bound: int = 2  # index values stay below this

    def describe(self) -> str:
        if self.kind == "python" and isinstance(self.value, list):
            return f"a list [{','.join(str(d) for d in self.shape)}]"
        if self.kind == "python":
            return getattr(self.value, "__name__", None) or repr(self.value)
        return f"{self.dtype}[{','.join(str(d) for d in self.shape)}]"


Candidate = tuple[Slot, ...]


def key(candidate: Candidate) -> tuple[Any, ...]:
    return tuple((s.kind, s.shape, s.dtype, repr(s.value), s.spd, s.bound) for s in candidate)


def float_values(dtype: str, shape: Sequence[int], index: int) -> np.ndarray:
    """Deterministic, non-trivial values: mixed signs, distinct per argument, away from 0 and ±1."""
    count = int(np.prod(shape)) if shape else 1
    k = np.arange(count, dtype=np.float64)
    magnitude = 0.35 + 0.55 * k + 0.2 * index
    sign = np.where(k % 2 == 0, 1.0, -1.0)
    return (magnitude * sign).reshape(tuple(shape)).astype(dtype)


def materialize(candidate: Candidate) -> list[Any]:
    args: list[Any] = []
    for index, slot in enumerate(candidate):
        if slot.kind == "python":
            args.append(slot.value)
        elif slot.kind == "shape":  # a 1-D integer shape, e.g. a sampler's sample shape
            args.append(np.full(slot.shape, slot.value, dtype=slot.dtype))
        elif slot.kind == "index":
            count = int(np.prod(slot.shape)) if slot.shape else 1
            values = (np.arange(count) * 7 + 1) % max(1, slot.bound)
            args.append(values.reshape(slot.shape).astype(slot.dtype))
        else:
            values = float_values(slot.dtype, slot.shape, index)
            if slot.spd and len(slot.shape) >= 2 and slot.shape[-1] == slot.shape[-2]:
                n = slot.shape[-1]
                values = np.matmul(values, np.swapaxes(values, -1, -2)) + n * np.eye(n, dtype=slot.dtype)
                values = values.astype(slot.dtype)
            elif slot.dtype.startswith("float") and _positive_domain(slot):
                values = np.abs(values)
            args.append(values)
    return args


def _positive_domain(slot: Slot) -> bool:
    return slot.value == "positive"


def positive(slot: Slot) -> Slot:
    return replace(slot, value="positive")


class _Classes:
    """Union-find over (parameter, dimension position)."""

    def __init__(self) -> None:
        self.parent: dict[tuple[str, int], tuple[str, int]] = {}

    def find(self, item: tuple[str, int]) -> tuple[str, int]:
        self.parent.setdefault(item, item)
        while self.parent[item] != item:
            self.parent[item] = self.parent[self.parent[item]]
            item = self.parent[item]
        return item

    def union(self, a: tuple[str, int], b: tuple[str, int]) -> None:
        self.parent[self.find(a)] = self.find(b)


def probe_function(*args: Any, **kwargs: Any) -> Any:
    """For a parameter the body calls: scales its first argument (differentiable, any structure)."""
    first = args[0] if args else next(iter(kwargs.values()), None)
    if isinstance(first, (list, tuple)):
        return type(first)(probe_function(a) for a in first)
    return first * 1.5 if first is not None and not isinstance(first, (str, bool)) else first


def python_slot(kind: str, why: str = "") -> Slot:
    if kind == "callable":
        return Slot("python", value=probe_function)
    if kind == "shape":
        return Slot("shape", (1,), "int32", value=3)
    value: Any = PYTHON_DEFAULTS.get(kind, 2)
    if kind == "int" and why.startswith("axis"):
        value = -1
    elif kind == "int" and why == "an index":
        value = 1
    return Slot("python", value=value)


def structured(facts: Facts, unknown_shape: tuple[int, ...] | None, dtype: str = "float32") -> Candidate:  # noqa: C901 (a table of cases)
    """One candidate: facts decide ranks and shared sizes; parameters without facts get ``unknown_shape``."""
    ranks: dict[str, int] = {}
    for name in facts.names:
        kind = facts.kind.get(name, "tensor")
        if kind in PYTHON_KINDS or name in facts.defaults:
            continue
        if name in facts.min_rank:
            ranks[name] = facts.min_rank[name]
        elif kind == "index":
            ranks[name] = 1
        elif unknown_shape is not None:
            ranks[name] = len(unknown_shape)
    classes = _Classes()

    def position(name: str, pos: int) -> tuple[str, int] | None:
        rank = ranks.get(name)
        if rank is None:
            return None
        pos = pos + rank if pos < 0 else pos
        return (name, pos) if 0 <= pos < rank else None

    for a, pa, b, pb in facts.equal:
        left, right = position(a, pa), position(b, pb)
        if left is not None and right is not None:
            classes.union(left, right)
    for name in facts.square:
        left, right = position(name, -1), position(name, -2)
        if left is not None and right is not None:
            classes.union(left, right)
    sizes: dict[tuple[str, int], int] = {}
    fresh = iter(EVEN_SIZES if facts.strided else SIZES)
    slots: list[Slot] = []
    for name in facts.names:
        kind = facts.kind.get(name, "tensor")
        if name in facts.defaults:
            slots.append(Slot("python", value=facts.defaults[name]))
            continue
        if kind in PYTHON_KINDS:
            slots.append(python_slot(kind, facts.why.get(name, "")))
            continue
        if name not in ranks:
            slots.append(Slot("tensor", unknown_shape or (), dtype))
            continue
        if name not in facts.min_rank and kind != "index" and unknown_shape is not None:
            slots.append(Slot("tensor", unknown_shape, dtype))
            continue
        shape = []
        for pos in range(ranks[name]):
            root = classes.find((name, pos))
            if root not in sizes:
                sizes[root] = next(fresh, 2)
            shape.append(sizes[root])
        if kind == "index":
            slots.append(Slot("index", tuple(shape), "int32"))
        else:
            slots.append(Slot("tensor", tuple(shape), dtype, spd=name in facts.spd))
    # a parameter made into a NumPy array: a nested list of that shape
    for index, name in enumerate(facts.names):
        slot = slots[index]
        if facts.kind.get(name) == "array" and slot.kind == "tensor":
            values = float_values("float32", slot.shape, index)
            slots[index] = Slot("python", slot.shape, "float32", value=values.tolist())
    # index bounds: the size of the table's dimension they index
    by_name = dict(zip(facts.names, slots))
    for ids, (table, axis) in facts.bound.items():
        table_slot, ids_slot = by_name.get(table), by_name.get(ids)
        if table_slot is None or ids_slot is None or ids_slot.kind != "index" or not table_slot.shape:
            continue
        bound = table_slot.shape[axis] if -len(table_slot.shape) <= axis < len(table_slot.shape) else 2
        by_name[ids] = replace(ids_slot, bound=bound)
    return tuple(by_name[n] for n in facts.names)


def from_call_site(facts: Facts, site: list[ArgSpec | None]) -> Candidate | None:
    """A call site's literal shapes; parameters it leaves open come from the facts."""
    base = structured(facts, None)
    slots = list(base)
    for index, spec in enumerate(site):
        if spec is None or index >= len(slots):
            continue
        if spec.python:
            slots[index] = Slot("python", value=spec.value)
        elif spec.shape is not None:
            dtype = spec.dtype or "float32"
            if dtype.startswith(("int", "uint")):
                slots[index] = Slot("index", spec.shape, dtype, bound=2)
            else:
                slots[index] = Slot("tensor", spec.shape, dtype, spd=slots[index].spd)
    return tuple(slots)


def initial(facts: Facts, sites: list[list[ArgSpec | None]]) -> list[Candidate]:
    """Candidates in the order they are tried: call sites, then the facts with each uniform shape."""
    out: list[Candidate] = []
    seen: set[tuple[Any, ...]] = set()

    def add(candidate: Candidate | None) -> None:
        if candidate is not None and key(candidate) not in seen:
            seen.add(key(candidate))
            out.append(candidate)

    for site in sites:
        add(from_call_site(facts, site))
    for shape in UNIFORM_SHAPES:
        add(structured(facts, shape))
    return out


def with_dtype(candidate: Candidate, dtype: str) -> Candidate:
    return tuple(replace(s, dtype=dtype) if s.kind == "tensor" and s.dtype.startswith("float") else s
                 for s in candidate)


def describe(names: Sequence[str], candidate: Candidate) -> str:
    return ", ".join(f"{n}: {s.describe()}" for n, s in zip(names, candidate))

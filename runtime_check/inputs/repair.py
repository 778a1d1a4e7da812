"""Read the forward's own error into adjusted candidates, and into a short reason for the report.

TensorFlow names the shapes it could not combine (``Incompatible shapes: [2,3] vs. [4]``,
``Matrix size-incompatible: In[0]: [2,3], In[1]: [2,3]``), the rank it wanted, the dtype an op
accepts, the size a reshape needs. Each message becomes one or more candidates that change one
parameter's shape, rank, dtype or kind; the search tries them before anything else.
"""

from __future__ import annotations

import re
from dataclasses import replace
from collections.abc import Sequence

from .assign import Candidate, Slot, positive

_SHAPE = r"\[([0-9, ]*)\]"
_INCOMPATIBLE = re.compile(r"(?:Incompatible shapes|must have compatible batch dimensions|"
                           r"shapes? must be equal|Shapes must be equal)[^\[]*" + _SHAPE + r"\s*vs\.?\s*" + _SHAPE)
_CONCAT = re.compile(r"shape\[0\] = " + _SHAPE + r" vs\. shape\[\d+\] = " + _SHAPE)
_MATRIX = re.compile(r"Matrix size-incompatible: In\[0\]: " + _SHAPE + r", In\[1\]: " + _SHAPE)
_NDIMS = re.compile(r"different ndims: " + _SHAPE + r" vs\. " + _SHAPE)
_DIMS_EQUAL = re.compile(r"Dimensions must be equal, but are (\d+) and (\d+)")
_EXPECTED_DIM = re.compile(r"Expected dimension (\d+) at axis (\d+) of the input shaped " + _SHAPE +
                           r" but got dimension (\d+)")
_RESHAPE = re.compile(r"Input to reshape is a tensor with (\d+) values, but the requested shape has (\d+)")
_RANK_NEEDED = re.compile(r"(?:must be (?:at least )?rank |must be |expected (?:min_)?ndim=|to have rank |"
                          r"ndims must be >= |must be at least )(\d+)(?:-dimensional)?")
_INTEGER = re.compile(r"(Tindices|'TI'|'Tidx'|expected to be a int\d* tensor|must be an integer|integer tensor|"
                      r"indices must be|only integers|int32 tensor but is a float)", re.IGNORECASE)
_FLOAT = re.compile(r"expected to be a (?:float|double) tensor but is a int", re.IGNORECASE)
_PYTHON_INT = re.compile(r"(__index__|cannot be interpreted as an integer|only integer scalar arrays|"
                         r"Expected int32|Expected int for|must be an int|object cannot be interpreted)")
_OUT_OF_RANGE = re.compile(r"indices\[[^\]]*\] = (-?\d+) is not in \[0, (\d+)\)")
_SQUARE = re.compile(r"(must be square|square matri|not square)", re.IGNORECASE)
_SPD = re.compile(r"(not positive|Cholesky decomposition was not successful|not invertible|singular)",
                  re.IGNORECASE)
_RANK_LOW = re.compile(r"(Invalid reduction dimension|input has only \d+ dims|tuple index out of range|"
                       r"index out of range|must be in the range \[|out of bounds for|Index out of range)",
                       re.IGNORECASE)


def _shape(text: str) -> tuple[int, ...]:
    return tuple(int(d) for d in text.replace(" ", "").split(",") if d)


def _tensors(candidate: Candidate, kinds: tuple[str, ...] = ("tensor",)) -> list[int]:
    return [i for i, s in enumerate(candidate) if s.kind in kinds]


def _set(candidate: Candidate, index: int, slot: Slot) -> Candidate:
    return tuple(slot if i == index else s for i, s in enumerate(candidate))


def _with_shape(candidate: Candidate, index: int, shape: tuple[int, ...]) -> Candidate:
    return _set(candidate, index, replace(candidate[index], shape=tuple(shape)))


def _having(candidate: Candidate, shape: tuple[int, ...]) -> list[int]:
    return [i for i in _tensors(candidate, ("tensor", "index")) if candidate[i].shape == shape]


def _reshaped(candidate: Candidate, a: tuple[int, ...], b: tuple[int, ...]) -> list[Candidate]:
    """Parameters shaped ``a`` become ``b``-compatible and vice versa: trailing dims first (a bias), then all."""
    out: list[Candidate] = []
    for source, target in ((b, a), (a, b)):
        for index in _having(candidate, source):
            if len(source) > len(target) > 0:  # keep the rank, match the trailing dims
                out.append(_with_shape(candidate, index, source[: len(source) - len(target)] + target))
            if len(source) <= len(target) and len(source) > 0:
                out.append(_with_shape(candidate, index, target[len(target) - len(source):]))
            out.append(_with_shape(candidate, index, target))
    return out


def _raise_rank(candidate: Candidate, indices: Sequence[int], rank: int | None = None) -> list[Candidate]:
    out = []
    for index in indices:
        shape = candidate[index].shape
        if rank is not None and rank > len(shape):
            new = tuple([2, 3, 4, 5, 6][: rank - len(shape)]) + shape
        else:
            new = (2,) + shape
        if len(new) <= 5:
            out.append(_with_shape(candidate, index, new))
    return out


def repairs(text: str, candidate: Candidate) -> tuple[list[Candidate], str]:  # noqa: C901 (a table of cases)
    """(adjusted candidates to try next, a short reason without TF's wording)."""
    out: list[Candidate] = []
    reason = "an error unrelated to shapes"
    match = _MATRIX.search(text)
    if match:
        a, b = _shape(match.group(1)), _shape(match.group(2))
        reason = "matrix sizes that do not match"
        for index in _having(candidate, b):
            if len(b) >= 2 and a:
                out.append(_with_shape(candidate, index, b[:-2] + (a[-1], b[-1])))
        for index in _having(candidate, a):
            if len(a) >= 2 and len(b) >= 2:
                out.append(_with_shape(candidate, index, a[:-1] + (b[-2],)))
        return out, reason
    match = _NDIMS.search(text)
    if match:
        a, b = _shape(match.group(1)), _shape(match.group(2))
        smaller = a if len(a) < len(b) else b
        return _raise_rank(candidate, _having(candidate, smaller), max(len(a), len(b))), "inputs of different ranks"
    match = _INCOMPATIBLE.search(text) or _CONCAT.search(text)
    if match:
        a, b = _shape(match.group(1)), _shape(match.group(2))
        return _reshaped(candidate, a, b), "shapes that do not broadcast"
    match = _EXPECTED_DIM.search(text)
    if match:
        want, axis, shape = int(match.group(1)), int(match.group(2)), _shape(match.group(3))
        for index in _having(candidate, shape):
            if axis < len(shape):
                out.append(_with_shape(candidate, index, shape[:axis] + (want,) + shape[axis + 1:]))
        return out, "related dimensions that differ"
    match = _DIMS_EQUAL.search(text)
    if match:
        first, second = int(match.group(1)), int(match.group(2))
        for index in _tensors(candidate):
            dims = candidate[index].shape
            if dims and dims[-1] == second:
                out.append(_with_shape(candidate, index, dims[:-1] + (first,)))
            if dims and dims[-1] == first:
                out.append(_with_shape(candidate, index, dims[:-1] + (second,)))
        return out, "related dimensions that differ"
    match = _RESHAPE.search(text)
    if match:
        have, want = int(match.group(1)), int(match.group(2))
        for index in _tensors(candidate):
            size = 1
            for d in candidate[index].shape:
                size *= d
            if size == have and 0 < want <= 4096:
                out.append(_with_shape(candidate, index, (want,)))
        return out, f"a fixed size ({want} elements)"
    match = _OUT_OF_RANGE.search(text)
    if match:
        bound = max(1, int(match.group(2)))
        for index in _tensors(candidate, ("index",)):
            out.append(_set(candidate, index, replace(candidate[index], bound=bound)))
        return out, "indices out of range"
    if _FLOAT.search(text):
        for index in _tensors(candidate, ("index",)):
            out.append(_set(candidate, index, Slot("tensor", candidate[index].shape, "float32")))
        return out, "a float where an integer was given"
    if _INTEGER.search(text):
        for index in reversed(_tensors(candidate)):
            slot = candidate[index]
            out.append(_set(candidate, index, Slot("index", slot.shape or (3,), "int32", bound=2)))
        return out, "integer indices"
    if _PYTHON_INT.search(text):
        for index in reversed(_tensors(candidate, ("tensor", "index"))):
            if not candidate[index].shape:
                out.append(_set(candidate, index, Slot("python", value=2)))
        for index in reversed(_tensors(candidate, ("tensor", "index"))):
            if candidate[index].shape:
                out.append(_set(candidate, index, Slot("python", value=2)))
        return out, "a Python integer"
    if _SQUARE.search(text):
        for index in _tensors(candidate):
            shape = candidate[index].shape
            if len(shape) >= 2 and shape[-1] != shape[-2]:
                out.append(_with_shape(candidate, index, shape[:-1] + (shape[-2],)))
            elif len(shape) < 2:
                out.append(_with_shape(candidate, index, shape[:-1] + (3, 3) if shape else (3, 3)))
        return out, "square matrices"
    if _SPD.search(text):
        for index in _tensors(candidate):
            if len(candidate[index].shape) >= 2:
                out.append(_set(candidate, index, replace(candidate[index], spd=True)))
        return out, "positive-definite matrices"
    match = _RANK_NEEDED.search(text)
    if match or _RANK_LOW.search(text):
        rank = int(match.group(1)) if match else None
        tensors = _tensors(candidate, ("tensor", "index"))
        lowest = min((len(candidate[i].shape) for i in tensors), default=0)
        low = [i for i in tensors if len(candidate[i].shape) == lowest]
        return _raise_rank(candidate, low, rank), f"inputs of rank {rank}" if rank else "inputs of higher rank"
    if "NaN" in text or "nan" in text or "Inf" in text or "must be positive" in text or "must be >= 0" in text:
        for index in _tensors(candidate):
            out.append(_set(candidate, index, positive(candidate[index])))
        return out, "values in the function's domain"
    return out, reason


def short_reason(exc: BaseException) -> str:
    """One line about why an input was rejected, in our words."""
    _, reason = repairs(str(exc), ())
    if reason == "an error unrelated to shapes":
        return f"{type(exc).__name__} in the forward"
    return f"the forward needs {reason}"

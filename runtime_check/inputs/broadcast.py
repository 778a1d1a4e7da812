"""Is a parameter broadcast against another tensor under these inputs?

A shape finding is worth reporting only for a call the function is meant for. A parameter is
*expanded* when it is a scalar combined with a non-scalar (an output, another parameter, a
captured variable), or when one of its dimensions is 1 where that tensor's is larger. Missing
leading dimensions alone (a bias ``[k]`` added to ``[n, k]``) are how such parameters are meant to
be used, and do not count.

Once inputs without broadcasting are found, :func:`applied_shapes` gives the other half: the
shapes a parameter takes when it *is* used that way (``[3]`` for a ``[4, 3]`` parameter meeting a
``[4, 3]`` tensor), so a gradient that is not reduced back to such a parameter is exercised too.
"""

from __future__ import annotations

from collections.abc import Sequence

Shape = tuple[int, ...]


def expands(shape: Shape, other: Shape) -> bool:
    """``shape`` broadcasts to ``other`` by scalar or size-1 expansion (not only by missing leading dims)."""
    if len(shape) > len(other):
        return False
    if not shape:
        return len(other) > 0 and any(d != 1 for d in other)
    tail = other[len(other) - len(shape):]
    if any(a != b and a != 1 for a, b in zip(shape, tail)):
        return False  # not broadcast-compatible: the two never met in one op
    return any(a == 1 and b > 1 for a, b in zip(shape, tail))


def broadcast_parameters(params: dict[str, Shape], outputs: Sequence[Shape], variables: Sequence[Shape]) -> list[str]:
    """Names of the tensor parameters that are expanded against an output, a variable or another parameter."""
    found = []
    for name, shape in params.items():
        others = [*outputs, *variables, *(s for n, s in params.items() if n != name)]
        # a scalar is expanded only against an output: two scalars' product is a scalar
        candidates = outputs if not shape else others
        if any(expands(shape, other) for other in candidates):
            found.append(name)
    return found


def widened(shape: Shape, outputs: Sequence[Shape], variables: Sequence[Shape]) -> list[Shape]:
    """Shapes to try instead of an expanded one: the trailing dims of what it met, then all of it."""
    out: list[Shape] = []
    for other in [*variables, *outputs]:
        if expands(shape, other):
            rank = max(1, len(shape))
            for candidate in (other[len(other) - rank:], other):
                if candidate not in out:
                    out.append(candidate)
    return out


def applied_shapes(shape: Shape, met: Sequence[Shape]) -> list[Shape]:
    """``shape`` without some of its leading dimensions, as a bias or per-channel scale meets a larger
    tensor: every proper suffix of rank >= 1 (longest first) that is also the trailing part of a
    higher-rank shape in ``met``. ``[3]`` and ``[4, 3]`` for ``[2, 4, 3]`` meeting ``[2, 4, 3]``."""
    out: list[Shape] = []
    for rank in range(len(shape) - 1, 0, -1):
        tail = shape[len(shape) - rank:]
        if any(len(other) > rank and other[len(other) - rank:] == tail for other in met):
            out.append(tail)
    return out

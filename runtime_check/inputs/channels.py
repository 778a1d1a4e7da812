"""Per-channel parameters: a parameter whose size the forward ties to some axes of the data.

A normalisation's scale and offset are vectors of the data's channels: the forward combines them
with statistics reduced over the other axes (``tf.nn.moments(x, axes=(0, 1, 2))``), reshapes them
to ``[1, 1, 1, -1]`` before they meet the data, or passes them to a batch-norm op. Probed with a
shape of their own they broadcast in ways the project never uses, and a gradient summed back to
the channel axis then looks wrong. Read here, from the source only: such a parameter gets the
data's kept dimensions (``[C]`` for ``x: [N, H, W, C]``), and the data a rank that keeps one.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .hints import Facts, _arg, _int, _name, dotted

REDUCTIONS = frozenset({"moments", "reduce_mean", "reduce_sum", "reduce_variance", "reduce_std", "reduce_max",
                        "reduce_min", "reduce_prod", "reduce_logsumexp"})
FUSED_BATCH_NORM = frozenset({"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3", "fused_batch_norm"})
ELEMENTWISE = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)


@dataclass(frozen=True)
class Channels:
    """The part of ``data``'s shape a per-channel value has: ``data`` reduced over ``axes``
    (non-negative) at rank ``rank`` at least; ``aligned_end``: the axes count from the end (a
    ``[1, 1, 1, -1]`` reshape meets the data's trailing dimensions)."""

    data: str
    axes: tuple[int, ...]
    rank: int
    aligned_end: bool = False

    def kept(self, data_rank: int) -> list[int]:
        shift = data_rank - self.rank if self.aligned_end else 0
        reduced = {a + shift for a in self.axes} | (set(range(shift)) if self.aligned_end else set())
        return [i for i in range(data_rank) if i not in reduced]


def _reduction(call: ast.Call, facts: Facts) -> Channels | None:
    """``tf.nn.moments(x, axes=(0, 1, 2))``, ``tf.reduce_mean(x, axis=[0, 1])`` on a parameter, without keepdims."""
    if dotted(call.func).rsplit(".", 1)[-1] not in REDUCTIONS:
        return None
    data = _name(_arg(call, 0, "x", "input_tensor", "input"))
    axes_node = _arg(call, 1, "axes", "axis")
    keepdims = _arg(call, 2 if dotted(call.func).endswith("moments") else 99, "keepdims", "keep_dims")
    if data not in facts.names or not isinstance(axes_node, (ast.List, ast.Tuple)) or not axes_node.elts:
        return None
    if keepdims is not None and not (isinstance(keepdims, ast.Constant) and keepdims.value is False):
        return None
    axes = [_int(a) for a in axes_node.elts]
    if any(a is None or a < 0 for a in axes):
        return None
    clean = tuple(sorted({a for a in axes if a is not None}))
    # reduced over its leading axes, the data keeps at least one: its channels
    return Channels(data, clean, max(clean) + 2)  # type: ignore[arg-type]


def _reshaped(call: ast.Call, facts: Facts) -> tuple[str, Channels] | None:
    """``tf.reshape(gamma, [1, 1, 1, -1])``: a vector laid along one axis of the data (the first parameter)."""
    if dotted(call.func).rsplit(".", 1)[-1] != "reshape":
        return None
    param, shape = _name(_arg(call, 0, "tensor")), _arg(call, 1, "shape")
    data = facts.names[0] if facts.names else None
    if param not in facts.names or param == data or data is None or not isinstance(shape, (ast.List, ast.Tuple)):
        return None
    dims = [_int(e) for e in shape.elts]
    if len(dims) < 2 or dims.count(-1) != 1 or any(d not in (1, -1) for d in dims):
        return None
    kept = dims.index(-1)
    return param, Channels(data, tuple(i for i in range(len(dims)) if i != kept), len(dims), aligned_end=True)  # type: ignore[arg-type]


class _Reader:
    def __init__(self, function: ast.AST, facts: Facts) -> None:
        self.facts = facts
        self.values: dict[str, Channels] = {}  # locals shaped like per-channel statistics
        self.tied: dict[str, Channels] = {}
        self.normalised: dict[str, Channels] = {}  # locals holding the data normalised per channel
        self.assigned: set[str] = set()
        for node in ast.walk(function):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    for sub in ast.walk(target):
                        if isinstance(sub, ast.Name):
                            self.assigned.add(sub.id)

    def channel(self, node: ast.AST) -> Channels | None:
        """The channels ``node`` has when it is made of per-channel values and scalars only."""
        if isinstance(node, ast.Name):
            if node.id in self.values:
                return self.values[node.id]
            return self.tied.get(node.id)
        if isinstance(node, ast.Call) and node.args:  # rsqrt(var + eps), sqrt(var)
            return self.channel(node.args[0]) if all(self._scalar(a) for a in node.args[1:]) else None
        if isinstance(node, ast.UnaryOp):
            return self.channel(node.operand)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ELEMENTWISE):
            left, right = self.channel(node.left), self.channel(node.right)
            if left is not None and (right == left or self._scalar(node.right)):
                return left
            if right is not None and self._scalar(node.left):
                return right
        return None

    def _scalar(self, node: ast.AST) -> bool:
        """A number, or a name from outside (``epsilon`` of a factory): not the data, not a local."""
        if isinstance(node, ast.Constant):
            return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
        if isinstance(node, ast.Name):
            return node.id not in self.facts.names and node.id not in self.assigned
        if isinstance(node, ast.UnaryOp):
            return self._scalar(node.operand)
        return False

    def _parameter(self, node: ast.AST, channels: Channels) -> str | None:
        name = _name(node)
        if name is None or name not in self.facts.names or name == channels.data:
            return None
        if self.facts.kind.get(name, "tensor") != "tensor":
            return None
        return name

    def tie(self, node: ast.AST, channels: Channels) -> None:
        name = self._parameter(node, channels)
        if name is not None and name not in self.tied:
            self.tied[name] = channels

    def scaled(self, node: ast.AST) -> Channels | None:
        """``x * ginv``, ``(x - mean) * k``, a local ``xhat`` made so: the data normalised per channel."""
        if isinstance(node, ast.Name):
            return self.normalised.get(node.id)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ELEMENTWISE):
            for side, other in ((node.left, node.right), (node.right, node.left)):
                channels = self.channel(side)
                if channels is not None and any(_name(n) == channels.data or _name(n) in self.normalised
                                                for n in ast.walk(other)):
                    return channels
        return None

    def terms(self, node: ast.AST) -> list[ast.AST]:
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            return self.terms(node.left) + self.terms(node.right)
        return [node]

    def read(self, function: ast.AST) -> None:
        for _ in range(3):  # values feed ties and ties feed values: a few passes reach the end
            before = (len(self.values), len(self.tied), len(self.normalised))
            for node in ast.walk(function):
                if isinstance(node, ast.Assign):
                    self._assign(node)
                elif isinstance(node, ast.Call):
                    self._call(node)
                elif isinstance(node, ast.BinOp) and isinstance(node.op, ELEMENTWISE):
                    self._binop(node)
            if (len(self.values), len(self.tied), len(self.normalised)) == before:
                break

    def _assign(self, node: ast.Assign) -> None:
        if len(node.targets) != 1:
            return
        target, value = node.targets[0], node.value
        channels = _reduction(value, self.facts) if isinstance(value, ast.Call) else None
        channels = channels or self.channel(value)
        if channels is None:
            normalised = self.scaled(value)
            if isinstance(target, ast.Name) and normalised is not None and target.id not in self.facts.names:
                self.normalised.setdefault(target.id, normalised)
            return
        names = target.elts if isinstance(target, ast.Tuple) else [target]
        for element in names:
            if isinstance(element, ast.Name) and element.id not in self.facts.names:
                self.values.setdefault(element.id, channels)

    def _call(self, call: ast.Call) -> None:
        last = dotted(call.func).rsplit(".", 1)[-1]
        reshaped = _reshaped(call, self.facts)
        if reshaped is not None:
            self.tie(ast.Name(reshaped[0]), reshaped[1])
        elif last in FUSED_BATCH_NORM:
            data = _name(_arg(call, 0, "x"))
            layout = _arg(call, 99, "data_format")
            nhwc = layout is None or (isinstance(layout, ast.Constant) and layout.value == "NHWC")
            if data is not None and data in self.facts.names and nhwc:  # per channel of the last axis
                fused = Channels(data, (0, 1, 2), 4)
                for arg in (_arg(call, 1, "scale"), _arg(call, 2, "offset")):
                    if arg is not None:
                        self.tie(arg, fused)
        elif last == "batch_normalization":
            stats = self.channel(_arg(call, 1, "mean") or ast.Constant(None))
            if stats is not None:
                for arg in (_arg(call, 3, "offset"), _arg(call, 4, "scale")):
                    if arg is not None:
                        self.tie(arg, stats)

    def _binop(self, node: ast.BinOp) -> None:
        for side, other in ((node.left, node.right), (node.right, node.left)):
            channels = self.channel(other)
            if channels is not None:
                self.tie(side, channels)  # ``rsqrt(var + eps) * gamma``
            normalised = self.scaled(other) if isinstance(node.op, (ast.Mult, ast.Div)) else None
            if normalised is not None:
                self.tie(side, normalised)  # ``xhat * gamma``: the affine after a per-channel normalisation
        if isinstance(node.op, (ast.Add, ast.Sub)):  # ``x * ginv + beta - mean * ginv``: a per-channel offset
            terms = self.terms(node)
            found = next((c for c in (self.channel(t) or self.scaled(t) for t in terms) if c is not None), None)
            if found is not None:
                for term in terms:
                    self.tie(term, found)


def per_channel(function: ast.AST, facts: Facts) -> None:
    """Give each per-channel parameter the data's kept dimensions, and the data a rank that keeps one."""
    reader = _Reader(function, facts)
    reader.read(function)
    for name, channels in reader.tied.items():
        if name in facts.asserted or facts.min_rank.get(name, 0) > 1:
            continue  # the source says more about it than a vector of channels
        data_rank = facts.asserted.get(channels.data)
        if data_rank is None:
            facts.need_rank(channels.data, channels.rank, f"{name} is per channel of {channels.data}")
            data_rank = facts.min_rank[channels.data]
        kept = channels.kept(data_rank)
        if not kept:
            continue
        facts.rank[name] = facts.min_rank[name] = len(kept)
        facts.why.setdefault(name, f"per channel of {channels.data}")
        for position, axis in enumerate(kept):
            facts.equal.append((name, position, channels.data, axis))

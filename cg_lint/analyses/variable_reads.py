"""Which trainable variables a forward (or a grad) reads, found statically.

TensorFlow's VariableWatcher records every trainable variable read while the forward runs; it then
requires grad to accept ``variables``. We recognise the common spellings:

- names bound to ``tf.Variable(...)`` (module level, an enclosing function, or inside the forward);
- ``self.<attr>`` that the class assigns from ``tf.Variable``/``add_weight``/``get_variable``, or a
  weight (``kernel``, ``bias``...) inherited from a built-in Keras layer;
- Keras layers with weights called inside (``self.dense(x)``, ``dense(x)``);
- ``tf.compat.v1.get_variable(...)``.

``trainable=False`` variables are not watched by TF and are skipped, as are variables that callers
pass in positionally (TF subtracts inputs from ``variables``). Unknown means "not a variable".
``add_variable_reads`` fills the records' ``variable_reads`` once per file, before any rule runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, cast
from dataclasses import dataclass

import libcst as cst

from cg_lint.analyses.leaves import call_name
from cg_lint.model.records import CustomGradient, FuncNode, VariableRead
from cg_lint.syntax.environments import Unknown
from cg_lint.syntax.index import FileIndex

VARIABLE_CONSTRUCTORS = frozenset({
    "tensorflow.Variable", "tensorflow.compat.v1.Variable", "tensorflow.compat.v2.Variable",
    "tensorflow.python.ops.variables.Variable", "tensorflow.python.ops.resource_variable_ops.ResourceVariable",
    "tensorflow.compat.v1.get_variable", "tensorflow.python.ops.variable_scope.get_variable",
    "tensorflow.get_variable", "keras.Variable", "keras.src.backend.Variable", "tf_keras.Variable",
})
_WEIGHT_METHODS = frozenset({"add_weight", "add_variable"})
# Built-in Keras layers that own trainable weights (weightless ones like Dropout are not listed).
WEIGHTED_LAYERS = frozenset({
    "Dense", "EinsumDense", "Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose",
    "Conv3DTranspose", "Convolution1D", "Convolution2D", "Convolution3D", "SeparableConv1D", "SeparableConv2D",
    "DepthwiseConv1D", "DepthwiseConv2D", "Embedding", "BatchNormalization", "LayerNormalization",
    "GroupNormalization", "PReLU", "LSTM", "GRU", "SimpleRNN", "LSTMCell", "GRUCell", "SimpleRNNCell",
    "ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D", "MultiHeadAttention", "Bidirectional", "LocallyConnected1D",
    "LocallyConnected2D", "dense", "conv1d", "conv2d", "conv3d",
})
_LAYER_MODULES = ("keras.layers.", "keras.src.layers.", "tensorflow.keras.layers.", "tf_keras.layers.",
                  "tensorflow.compat.v1.keras.layers.", "tensorflow.compat.v1.layers.",
                  "tensorflow.python.keras.layers.")
_LAYER_BASES = ("keras.layers.", "keras.src.layers.", "tensorflow.keras.layers.", "tf_keras.layers.",
                "tensorflow.compat.v1.keras.layers.", "keras.Layer")
INHERITED_WEIGHTS = frozenset({"kernel", "bias", "embeddings", "gamma", "beta", "depthwise_kernel",
                               "pointwise_kernel", "recurrent_kernel"})
# Attribute uses of a variable that do not read its value.
_NON_READS = frozenset({"assign", "assign_add", "assign_sub", "scatter_update", "scatter_add", "name", "shape",
                        "dtype", "trainable", "ref", "experimental_ref", "initializer", "handle", "device",
                        "constraint", "synchronization", "aggregation", "path", "get_shape"})


def _trainable(call: cst.Call) -> bool:
    """False only for ``trainable=False`` (a non-literal value is treated as unknown: not trainable)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "trainable":
            return type(arg.value) is cst.Name and arg.value.value == "True"
    return True


@dataclass
class _ClassFacts:
    variables: set[str]
    layers: set[str]


_ASK = object()  # "look the owner up": None already means module level


class VariableFinder:
    """Finds variable reads in function bodies of one file; class facts are computed once per class.

    ``trainable_only``: the forward's ``variables=`` contract concerns trainable variables only,
    while reading any variable inside grad has the same graph-mode problems.
    """

    def __init__(self, index: FileIndex, trainable_only: bool = True) -> None:
        self.ix = index
        self.trainable_only = trainable_only
        self._classes: dict[int, _ClassFacts] = {}
        self._kinds: dict[tuple[int, str, bool], str | None] = {}
        self._selves: dict[tuple[int, str], cst.ClassDef | None] = {}

    def _counts(self, call: cst.Call) -> bool:
        return not self.trainable_only or _trainable(call)

    # -- what a value is --------------------------------------------------------------------
    def is_variable_value(self, value: cst.CSTNode, receiver_self: bool = False) -> bool:
        if type(value) is not cst.Call:
            return False
        if type(value.func) is cst.Attribute and value.func.attr.value in _WEIGHT_METHODS:
            return self._counts(value) and (not receiver_self or _is_name(value.func.value, "self"))
        return call_name(value, self.ix.qualnames) in VARIABLE_CONSTRUCTORS and self._counts(value)

    def is_layer_value(self, value: cst.CSTNode) -> bool:
        if type(value) is not cst.Call:
            return False
        name = call_name(value, self.ix.qualnames) or ""
        return (name.startswith(_LAYER_MODULES) and name.rsplit(".", 1)[-1] in WEIGHTED_LAYERS
                and self._counts(value))

    # -- reads ------------------------------------------------------------------------------
    def reads(self, func: FuncNode, record: CustomGradient, created_ok: bool = True) -> list[VariableRead]:
        """Variable reads in ``func``'s own body (nested functions excluded)."""
        found: list[VariableRead] = []
        seen: set[str] = set()
        for node, text, kind in self._candidates(func, created_ok):
            if text in seen or _passed_positionally(record, text):
                continue
            seen.add(text)
            found.append(VariableRead(anchor=node, locate=self.ix.position, text=text, kind=kind))
        return found

    def _candidates(self, func: FuncNode, created_ok: bool) -> Iterator[tuple[cst.CSTNode, str, str]]:
        # every node here is in func's own body, so func is where its names are looked up; the
        # (memoised) kind is asked before whether the node is a read, which is rarely needed
        reads = ("variable", "created") if created_ok else ("variable",)
        for node in self.ix.walk.function_nodes(func):
            kind_of = type(node)
            if kind_of is cst.Name:
                kind = self._name_kind(cast(cst.Name, node), owner=func)
                if kind in reads and self._is_load(node):
                    yield node, node.value, cast(str, kind)  # one of reads
            elif kind_of is cst.Attribute:
                if self._self_attr_kind(cast(cst.Attribute, node), func) == "variable" and self._is_load(node):
                    yield node, _text(node), "attribute"
            elif kind_of is cst.Call:
                callee = node.func
                if self.is_variable_value(node) and created_ok and not self._assigned(cast(cst.Call, node)):
                    yield node, _text(node), "created"
                elif self.is_layer_value(callee):
                    yield node, _text(callee), "layer"
                elif type(callee) is cst.Name and self._name_kind(callee, owner=func) == "layer":
                    yield node, callee.value, "layer"
                elif type(callee) is cst.Attribute and self._self_attr_kind(callee, func) == "layer":
                    yield node, _text(callee), "layer"
            elif kind_of is cst.Subscript and type(node.value) is cst.Name:
                if self._name_kind(node.value, element=True, owner=func) == "variable":
                    if self._is_load(node):
                        yield node, _text(node), "variable"  # an element of a list of variables
                else:
                    kind = self._name_kind(node.value, owner=func)
                    if kind in reads and self._is_load(node):
                        yield node, node.value.value, cast(str, kind)  # slicing a variable reads it

    def _assigned(self, call: cst.Call) -> bool:
        parent = self.ix.parent(call)
        return type(parent) in (cst.Assign, cst.AnnAssign, cst.NamedExpr, cst.Element)

    def _is_load(self, node: cst.CSTNode) -> bool:
        parent = self.ix.parent(node)
        if type(parent) in (cst.AssignTarget, cst.Param) or (
                type(parent) in (cst.AugAssign, cst.For, cst.CompFor) and parent.target is node):
            return False
        if type(parent) is cst.Attribute and parent.value is node:
            grand = self.ix.parent(parent)
            return parent.attr.value not in _NON_READS and not (
                type(grand) is cst.Attribute or (type(grand) is cst.AssignTarget))
        if type(parent) is cst.Call and parent.func is node:
            return False
        if type(parent) is cst.ComparisonTarget:
            parent = self.ix.parent(parent)
        if type(parent) is cst.Comparison and any(
                type(c.operator) in (cst.Is, cst.IsNot) for c in parent.comparisons):
            return False  # `v is w` matches variables by identity without reading them
        # a subscript of it is the read (a list of variables), not the name itself
        return not (type(parent) is cst.Subscript and parent.value is node)

    def _name_kind(self, name: cst.Name, element: bool = False, owner: Any = _ASK) -> str | None:
        """'variable' / 'created' / 'layer' when every binding of ``name`` is one (``owner``: the
        def or lambda ``name`` is looked up from, when the caller knows it)."""
        if owner is _ASK:
            owner = self.ix.owner(name)
        key = (id(owner), name.value, element)  # the answer depends only on where the name is looked up
        if key not in self._kinds:
            self._kinds[key] = self._lookup_kind(owner, name, element)
        return self._kinds[key]

    def _lookup_kind(self, owner: cst.CSTNode | None, name: cst.Name, element: bool) -> str | None:
        values = self.ix.env_for(owner).lookup(name.value)
        if not values:
            return None
        kinds = set()
        for value in values:
            if isinstance(value, Unknown) or not isinstance(value, cst.CSTNode):
                return None
            if element:
                listed = type(value) in (cst.List, cst.Tuple) and value.elements and all(
                    self.is_variable_value(e.value) for e in value.elements if type(e) is cst.Element)
                if listed or type(value) is cst.ListComp and self.is_variable_value(value.elt):
                    kinds.add("variable")
                else:
                    return None
            elif self.is_variable_value(value):
                local = self.ix.enclosing(value, (cst.FunctionDef, cst.Lambda)) is owner
                kinds.add("created" if local else "variable")
            elif self.is_layer_value(value):
                kinds.add("layer")
            else:
                return None
        return kinds.pop() if len(kinds) == 1 else None

    def _self_attr_kind(self, attr: cst.Attribute, owner: Any = _ASK) -> str | None:
        if type(attr.value) is not cst.Name:
            return None
        if owner is _ASK:
            owner = self.ix.owner(attr)
        key = (id(owner), attr.value.value)  # whose instance a name is depends only on where it is looked up
        if key in self._selves:
            cls = self._selves[key]
        else:
            cls = self._selves[key] = self._class_of_self(attr.value)
        if cls is None:
            return None
        facts = self._class_facts(cls)
        if attr.attr.value in facts.variables:
            return "variable"
        if attr.attr.value in facts.layers:
            return "layer"
        return None

    def _class_of_self(self, name: cst.Name) -> cst.ClassDef | None:
        """The class whose instance ``name`` is: the first parameter of an enclosing method."""
        func = self.ix.enclosing(name, (cst.FunctionDef, cst.Lambda))
        while func is not None:
            params = func.params
            own = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
            if name.value in own:
                if type(func) is not cst.FunctionDef or own[0] != name.value:
                    return None
                grand = self.ix.parent(self.ix.parent(func))
                if type(grand) is not cst.ClassDef:
                    return None
                decos = {cst.helpers.get_full_name_for_node(d.decorator) for d in func.decorators}
                return None if decos & {"staticmethod", "classmethod"} else grand
            if name.value in self.ix.env_for(func).bindings:
                return None
            func = self.ix.enclosing(func, (cst.FunctionDef, cst.Lambda))
        return None

    def _class_facts(self, cls: cst.ClassDef) -> _ClassFacts:
        facts = self._classes.get(id(cls))
        if facts is not None:
            return facts
        variables: set[str] = set()
        layers: set[str] = set()
        other: set[str] = set()
        for attr, value in self._self_assignments(cls):
            if self.is_variable_value(value, receiver_self=False):
                variables.add(attr)
            elif self.is_layer_value(value):
                layers.add(attr)
            elif not (type(value) is cst.Name and value.value == "None"):
                other.add(attr)
        if self._is_keras_layer_subclass(cls):
            variables |= INHERITED_WEIGHTS - other - layers
        facts = _ClassFacts(variables, layers - variables)
        self._classes[id(cls)] = facts
        return facts

    def _self_assignments(self, cls: cst.ClassDef) -> list[tuple[str, cst.BaseExpression]]:
        """Every ``self.x = value`` in the class's methods (nested classes excluded); walked once per
        file, as both finders (forward and grad) ask."""
        key = ("self_assignments", id(cls))
        found = self.ix.memo.get(key)
        if found is None:
            found = self.ix.memo[key] = [
                (target.target.attr.value, node.value)
                for node in _walk_class(cls, self.ix) if type(node) is cst.Assign
                for target in node.targets
                if type(target.target) is cst.Attribute and _is_name(target.target.value, "self")
            ]
        return found  # type: ignore[return-value]

    def _is_keras_layer_subclass(self, cls: cst.ClassDef) -> bool:
        """A subclass of a built-in Keras layer with weights (``kernel`` etc. come from it)."""
        for base in cls.bases:
            for name in self.ix.qualnames(base.value):
                if name.startswith(_LAYER_BASES) and name.rsplit(".", 1)[-1] in WEIGHTED_LAYERS:
                    return True
        return False


def _is_name(node: cst.CSTNode, value: str) -> bool:
    return type(node) is cst.Name and node.value == value


def _text(node: cst.CSTNode) -> str:
    text = cst.Module(body=[]).code_for_node(node)
    text = " ".join(text.split())
    return text if len(text) <= 40 else text[:37] + "..."


def _passed_positionally(record: CustomGradient, text: str) -> bool:
    """A caller passes this variable as an input: TF leaves it out of ``variables``."""
    pattern = re.compile(r"(?<![\w.])" + re.escape(text) + r"(?!\w)")
    module = cst.Module(body=[])
    for site in record.call_sites:
        for arg in site.positional:
            if pattern.search(module.code_for_node(arg.value)):
                return True
    return False


def _walk_class(cls: cst.ClassDef, index: FileIndex) -> Iterator[cst.CSTNode]:
    kids_of = index.walk.children
    stack: list[cst.CSTNode] = list(kids_of(cls.body))
    while stack:
        node = stack.pop()
        yield node
        if type(node) is cst.ClassDef:
            continue
        stack.extend(kids_of(node))


def add_variable_reads(index: FileIndex, records: list[CustomGradient]) -> None:
    """The one place that decides which variables each forward and grad reads."""
    forward_finder = VariableFinder(index, trainable_only=True)
    grad_finder = VariableFinder(index, trainable_only=False)
    for record in records:
        record.variable_reads = forward_finder.reads(record.node, record)
        for grad in record.grads:
            grad.variable_reads = grad_finder.reads(grad.node, record, created_ok=False)

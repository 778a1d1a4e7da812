"""Which trainable variables a forward (or a grad) reads, found statically.

TensorFlow's VariableWatcher records every trainable variable read while the forward runs; it then
requires grad to accept ``variables``. We recognise the common spellings:

- names bound to ``tf.Variable(...)`` (module level, an enclosing function, or inside the forward);
- ``self.<attr>`` that the class assigns from ``tf.Variable``/``add_weight``/``get_variable``, or a
  weight (``kernel``, ``bias``...) inherited from a built-in Keras layer;
- Keras layers with weights called inside (``self.dense(x)``, ``dense(x)``), a ``keras.Sequential``
  listing one among them;
- variables a plain module-level function of the file makes and returns (``m = make()``), and those
  the file's module-level functions the forward calls read (two calls deep);
- ``tf.compat.v1.get_variable(...)``.

``trainable=False`` variables are not watched by TF and are skipped, as are variables that callers
pass in positionally (TF subtracts inputs from ``variables``). Unknown means "not a variable".
``add_variable_reads`` fills the records' ``variable_reads`` once per file, before any rule runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import chain
from typing import Any, cast
from dataclasses import dataclass

import libcst as cst

from cg_lint.analyses.leaves import call_name
from cg_lint.model.bodies import all_bodies
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
# a layer's or module's collections of all its weights
_ALL_WEIGHTS = frozenset({"trainable_variables", "trainable_weights", "weights", "variables"})
_SEQUENTIAL = frozenset({"keras.Sequential", "keras.models.Sequential", "tensorflow.keras.Sequential",
                         "tensorflow.keras.models.Sequential", "tf_keras.Sequential", "tf_keras.models.Sequential",
                         "keras.src.models.Sequential"})
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
    lists: set[str]  # attributes holding a list of variables (`[self.add_weight(...) for ...]`)


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
        self._objects: dict[tuple[int, str, str], str | None] = {}
        self._making = False  # inside _makes_variable: helpers are followed one call deep

    def _counts(self, call: cst.Call) -> bool:
        return not self.trainable_only or _trainable(call)

    # -- what a value is --------------------------------------------------------------------
    def is_variable_value(self, value: cst.CSTNode, receiver_self: bool = False) -> bool:
        if type(value) is not cst.Call:
            return False
        if type(value.func) is cst.Attribute and value.func.attr.value in _WEIGHT_METHODS:
            return self._counts(value) and (not receiver_self or _is_name(value.func.value, "self"))
        if call_name(value, self.ix.qualnames) in VARIABLE_CONSTRUCTORS:
            return self._counts(value)
        return self._makes_variable(value)

    def _makes_variable(self, call: cst.Call) -> bool:
        """A call of a plain module-level function of the file whose every return is a new
        variable (``def make(): return tf.Variable(...)``), one call deep."""
        if type(call.func) is not cst.Name or self._making:
            return False
        found = self.ix.lookup_function(call.func)
        if len(found) != 1 or type(found[0]) is not cst.FunctionDef or found[0].decorators:
            return False
        helper = found[0]
        if self.ix.enclosing(helper, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) is not None:
            return False
        key = ("makes-variable", id(helper), self.trainable_only)
        known = self.ix.memo.get(key)
        if known is None:
            self._making = True
            try:
                returns = _return_values(self.ix, helper)
                known = bool(returns) and all(self._returned_variable(v, helper) for v in returns)
            finally:
                self._making = False
            self.ix.memo[key] = known
        return bool(known)

    def _returned_variable(self, value: cst.BaseExpression, helper: cst.FunctionDef) -> bool:
        if self.is_variable_value(value):
            return True
        if type(value) is not cst.Name:
            return False
        bound = self.ix.env_for(helper).bindings.get(value.value) or []
        return bool(bound) and all(isinstance(b, cst.CSTNode) and self.is_variable_value(b) for b in bound)

    def is_layer_value(self, value: cst.CSTNode) -> bool:
        if type(value) is not cst.Call:
            return False
        name = call_name(value, self.ix.qualnames) or ""
        if name.startswith(_LAYER_MODULES) and name.rsplit(".", 1)[-1] in WEIGHTED_LAYERS:
            return self._counts(value)
        return name in _SEQUENTIAL and self._counts(value) and self._weighted_sequence(value)

    def _weighted_sequence(self, call: cst.Call) -> bool:
        """``keras.Sequential([...])`` listing a weighted layer (weightless ones alone hold none)."""
        layers = next((a.value for a in call.args if a.keyword is None or a.keyword.value == "layers"), None)
        if type(layers) not in (cst.List, cst.Tuple):
            return False
        return any(type(e) is cst.Element and self.is_layer_value(e.value) for e in layers.elements)  # type: ignore[union-attr]

    # -- reads ------------------------------------------------------------------------------
    def reads(self, func: FuncNode, record: CustomGradient, created_ok: bool = True,
              helpers: int = 0) -> list[VariableRead]:
        """Variable reads in ``func``'s own body (nested functions excluded), and in the plain
        module-level functions of the file it calls, ``helpers`` calls deep (TF watches every
        variable read while the forward runs, wherever the read is)."""
        found: list[VariableRead] = []
        seen: set[str] = set()
        candidates = self._candidates(func, created_ok)
        if helpers:
            candidates = chain(candidates, self._helper_candidates(func, helpers, record))
        for node, text, kind in candidates:
            if text in seen or _passed_positionally(record, text):
                continue
            seen.add(text)
            found.append(VariableRead(anchor=node, locate=self.ix.position, text=text, kind=kind))
        return found

    def _helper_candidates(self, func: FuncNode, depth: int, record: CustomGradient
                           ) -> Iterator[tuple[cst.CSTNode, str, str]]:
        """Module-level variables and weights read by the file's plain module-level functions that
        ``func`` calls (not the custom gradients themselves), ``depth`` calls deep."""
        visited: set[int] = {id(record.node)}
        level: list[FuncNode] = [func]
        for _ in range(depth):
            following: list[FuncNode] = []
            for body in level:
                for node in self.ix.walk.function_nodes(body):
                    if type(node) is not cst.Call or type(node.func) is not cst.Name:
                        continue
                    helper = self._module_helper(node.func)
                    if helper is None or id(helper) in visited:
                        continue
                    visited.add(id(helper))
                    following.append(helper)
                    for found, text, kind in self._candidates(helper, created_ok=False):
                        yield found, text, "helper" if kind == "variable" else kind
            level = following

    def _module_helper(self, name: cst.Name) -> cst.FunctionDef | None:
        found = self.ix.lookup_function(name)
        if len(found) != 1 or type(found[0]) is not cst.FunctionDef or found[0].decorators:
            return None
        helper = found[0]
        if self.ix.enclosing(helper, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) is not None:
            return None
        if any(self.ix.is_custom_gradient(d.decorator) for d in helper.decorators):
            return None
        return helper

    def _candidates(self, func: FuncNode, created_ok: bool) -> Iterator[tuple[cst.CSTNode, str, str]]:
        # every node here is in func's own body, so func is where its names are looked up; the
        # (memoised) kind is asked before whether the node is a read, which is rarely needed
        reads = ("variable", "created") if created_ok else ("variable",)
        for node in self.ix.walk.function_nodes(func):
            kind_of = type(node)
            if kind_of is cst.Name:
                parent = self.ix.parent(node)
                if type(parent) is cst.Attribute and parent.attr is node:
                    continue  # `self.w`'s `w` is an attribute, not the module's variable `w`
                kind = self._name_kind(cast(cst.Name, node), owner=func)
                if kind in reads and self._is_load(node):
                    yield node, node.value, cast(str, kind)  # one of reads
            elif kind_of is cst.Attribute and self._all_weights_read(cast(cst.Attribute, node), func):
                yield node, _text(node), "attribute"
            elif kind_of is cst.Attribute:
                is_variable = (self._self_attr_kind(cast(cst.Attribute, node), func) == "variable"
                               or self._object_attr_kind(node, func) == "variable"  # type: ignore[arg-type]
                               or self._sublayer_weight(cast(cst.Attribute, node), func))
                if is_variable and self._is_load(node):
                    yield node, _text(node), "attribute"
            elif kind_of is cst.Call:
                callee = node.func
                if self.is_variable_value(node) and created_ok and not self._assigned(cast(cst.Call, node)):
                    yield node, _text(node), "created"
                elif self.is_layer_value(callee):
                    yield node, _text(callee), "layer"
                elif type(callee) is cst.Name and self._name_kind(callee, owner=func) == "layer":
                    yield node, callee.value, "layer"
                elif type(callee) is cst.Attribute and "layer" in (self._self_attr_kind(callee, func),
                                                                   self._object_attr_kind(callee, func)):
                    yield node, _text(callee), "layer"
            elif kind_of is cst.Subscript:
                found = self._subscript_read(cast(cst.Subscript, node), func, reads)
                if found is not None:
                    yield found

    def _subscript_read(self, node: cst.Subscript, func: FuncNode,
                        reads: tuple[str, ...]) -> tuple[cst.CSTNode, str, str] | None:
        value = node.value
        if type(value) is cst.Attribute:
            if self._self_attr_kind(value, func) == "variables" and self._is_load(node):
                return node, _text(node), "attribute"  # an element of a list of weights on self
            return None
        if type(value) is not cst.Name:
            return None
        if self._name_kind(value, element=True, owner=func) == "variable":
            return (node, _text(node), "variable") if self._is_load(node) else None  # an element of a list
        kind = self._name_kind(value, owner=func)
        if kind in reads and self._is_load(node):
            return node, value.value, cast(str, kind)  # slicing a variable reads it
        return None

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
                listed = type(value) in (cst.List, cst.Tuple, cst.Dict) and self._variable_list(
                    cast(cst.BaseExpression, value))
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
        if attr.attr.value in facts.lists:
            return "variables"
        return None

    def _all_weights_read(self, attr: cst.Attribute, owner: cst.CSTNode | None) -> bool:
        """``self.trainable_variables`` (``trainable_weights``, ``weights``, ``variables``) of a
        class with weights, iterated or handed to a TF op: every weight is read (``len()`` is not
        a read)."""
        if attr.attr.value not in _ALL_WEIGHTS or type(attr.value) is not cst.Name:
            return False
        parent = self.ix.parent(attr)
        if type(parent) in (cst.For, cst.CompFor):
            used = parent.iter is attr and self._element_read(parent)  # type: ignore[union-attr,arg-type]
        elif type(parent) is cst.Arg:
            call = self.ix.parent(parent)
            name = call_name(call, self.ix.qualnames) or "" if type(call) is cst.Call else ""
            used = name.startswith("tensorflow.") and ".nest." not in name
        else:
            used = False
        if not used:
            return False
        key = (id(owner), attr.value.value)
        cls = self._selves[key] if key in self._selves else self._class_of_self(attr.value)
        self._selves[key] = cls
        if cls is None:
            return False
        facts = self._class_facts(cls)
        return bool(facts.variables or facts.layers or facts.lists)

    def _element_read(self, loop: cst.For | cst.CompFor) -> bool:
        """The loop's element is used as a value (not only for its ``.name`` or ``.shape``)."""
        if type(loop.target) is not cst.Name:
            return False
        target = loop.target.value
        scope: cst.CSTNode | None = loop.body if type(loop) is cst.For else self.ix.parent(loop)
        while type(scope) is cst.CompFor:
            scope = self.ix.parent(scope)
        if scope is None:
            return False
        for node in self.ix.walk.walk(scope):
            if type(node) is cst.Name and node.value == target and node is not loop.target:
                parent = self.ix.parent(node)
                metadata = type(parent) is cst.Attribute and parent.value is node and parent.attr.value in _NON_READS
                if not metadata and not (type(parent) is cst.CompFor and parent.target is node):
                    return True
        return False

    def _sublayer_weight(self, attr: cst.Attribute, owner: cst.CSTNode | None) -> bool:
        """``self.embedding.embeddings``, ``self.dense.kernel``: a weight of a Keras layer that the
        class holds (TF watches it when the forward reads it, as any other variable)."""
        return (attr.attr.value in INHERITED_WEIGHTS and type(attr.value) is cst.Attribute
                and self._self_attr_kind(attr.value, owner) == "layer")

    def _object_attr_kind(self, attr: cst.Attribute, owner: cst.CSTNode | None) -> str | None:
        """'variable' / 'layer' for ``obj.x`` where ``obj`` is bound once, in the module or an
        enclosing function, to a constructor call that gives it a variable ``x``: a keyword
        (``Config(gain=tf.Variable(2.0))``, ``SimpleNamespace(...)``), a class of this file that
        assigns ``self.x`` from a variable, or a dataclass field (its default, or the positional
        argument in its place)."""
        base = attr.value
        if type(base) is not cst.Name or base.value in ("self", "cls"):
            return None
        key = (id(owner), base.value, attr.attr.value)
        if key in self._objects:
            return self._objects[key]
        found = self._objects[key] = self._object_kind(base, attr.attr.value, owner)
        return found

    def _object_kind(self, base: cst.Name, name: str, owner: cst.CSTNode | None) -> str | None:
        values = self.ix.env_for(owner).lookup(base.value)
        if not values or len(values) != 1 or type(values[0]) is not cst.Call:
            return None
        call: cst.Call = values[0]
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == name:
                return self._value_kind(arg.value)
        if type(call.func) is not cst.Name:
            return None
        classes = [v for v in self.ix.lookup_function(call.func) if type(v) is cst.ClassDef]
        if len(classes) != 1:
            return None
        cls = classes[0]
        facts = self._class_facts(cls)
        if name in facts.variables:
            return "variable"
        if name in facts.layers:
            return "layer"
        fields = _class_fields(cls)
        for field_name, default in fields:
            if field_name == name and default is not None:
                return self._value_kind(default)
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        names = [f for f, _ in fields]
        if name in names and names.index(name) < len(positional):
            return self._value_kind(positional[names.index(name)])
        return None

    def _value_kind(self, value: cst.BaseExpression) -> str | None:
        if self.is_variable_value(value):
            return "variable"
        return "layer" if self.is_layer_value(value) else None

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
        lists: set[str] = set()
        for attr, value in self._self_assignments(cls):
            if self.is_variable_value(value, receiver_self=False):
                variables.add(attr)
            elif self._variable_list(value):
                lists.add(attr)
            elif self.is_layer_value(value):
                layers.add(attr)
            elif not (type(value) is cst.Name and value.value == "None"):
                other.add(attr)
        if self._is_keras_layer_subclass(cls):
            variables |= INHERITED_WEIGHTS - other - layers
        facts = _ClassFacts(variables, layers - variables, lists - variables - layers - other)
        self._classes[id(cls)] = facts
        return facts

    def _variable_list(self, value: cst.BaseExpression) -> bool:
        if type(value) in (cst.ListComp, cst.GeneratorExp):
            return self.is_variable_value(value.elt)  # type: ignore[union-attr]
        if type(value) is cst.DictComp:
            return self.is_variable_value(value.value)  # type: ignore[union-attr]
        if type(value) is cst.Dict:  # {"a": tf.Variable(...), ...}: read as self.ws["a"]
            entries = [e.value for e in value.elements if type(e) is cst.DictElement]  # type: ignore[union-attr]
            return bool(entries) and len(entries) == len(value.elements) and all(  # type: ignore[union-attr]
                self.is_variable_value(e) for e in entries)
        if type(value) in (cst.List, cst.Tuple):
            elements = [e.value for e in value.elements if type(e) is cst.Element]  # type: ignore[union-attr]
            return bool(elements) and all(self.is_variable_value(e) for e in elements)
        return False

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


def keras3_weight_inputs(index: FileIndex, record: CustomGradient) -> list[tuple[cst.Arg, str]]:
    """Calls in the file that pass a Keras 3 weight of the layer (``self.kernel`` of a class based
    on ``keras.``) positionally, for an input the forward reads: (the argument, the input's name).
    A Keras 3 variable is no ``tf.Variable``: eagerly TF watches the ``tf.Variable`` behind it,
    which is not the input, so it counts as a variable the forward reads; traced, the input is
    converted to a tensor first and nothing is watched."""
    finder = VariableFinder(index)
    forward_names = {n.value for b in all_bodies(index, record) if not b.in_grad
                     for n in index.walk.function_nodes(b.func) if type(n) is cst.Name}
    params = record.signature.names
    out: list[tuple[cst.Arg, str]] = []
    for site in record.call_sites:
        if site.has_star or site.via_partial:
            continue
        for position, arg in enumerate(site.positional):
            value = arg.value
            if position >= len(params) or params[position] not in forward_names or type(value) is not cst.Attribute:
                continue
            if finder._self_attr_kind(value) != "variable":
                continue
            cls = finder._class_of_self(value.value)  # type: ignore[arg-type]
            if cls is not None and _keras3_class(index, cls) and _keras_weight(index, finder, cls, value.attr.value):
                out.append((arg, params[position]))
    return out


_KERAS_VARIABLES = frozenset({"keras.Variable", "keras.src.backend.Variable", "keras.variables.Variable"})


def _keras_weight(index: FileIndex, finder: VariableFinder, cls: cst.ClassDef, attr: str) -> bool:
    """``self.<attr>`` is made by Keras: ``add_weight`` or ``keras.Variable`` (a ``tf.Variable``
    assigned to a Keras 3 layer stays a ``tf.Variable``, which TF matches to the input)."""
    values = [v for a, v in finder._self_assignments(cls) if a == attr]
    if not values:
        return attr in INHERITED_WEIGHTS and finder._is_keras_layer_subclass(cls)
    return all(type(v) is cst.Call and (
        type(v.func) is cst.Attribute and v.func.attr.value in _WEIGHT_METHODS
        or call_name(v, index.qualnames) in _KERAS_VARIABLES) for v in values)


def _keras3_class(index: FileIndex, cls: cst.ClassDef) -> bool:
    """A class based directly on standalone Keras (``import keras``: Keras 3 with TF 2.16+)."""
    return any(name.startswith("keras.") and not name.startswith("keras.src.legacy")
               for base in cls.bases for name in index.qualnames(base.value))


def _return_values(index: FileIndex, func: cst.FunctionDef) -> list[cst.BaseExpression]:
    """What a plain function returns; empty when one return is bare or it is a generator."""
    out = []
    for node in index.walk.own_nodes(func.body):
        if type(node) in (cst.Yield, cst.Await):
            return []
        if type(node) is cst.Return:
            if node.value is None:
                return []
            out.append(node.value)
    return out


def _class_fields(cls: cst.ClassDef) -> list[tuple[str, cst.BaseExpression | None]]:
    """Class-level fields in order: ``x: T = default`` (a dataclass field; ``field(default=...)``
    and ``field(default_factory=lambda: ...)`` give their value) and ``x = value``."""
    body = cls.body.body if type(cls.body) is cst.IndentedBlock else []
    out: list[tuple[str, cst.BaseExpression | None]] = []
    for stmt in body:
        if type(stmt) is not cst.SimpleStatementLine:
            continue
        for small in stmt.body:
            if type(small) is cst.AnnAssign and type(small.target) is cst.Name:
                out.append((small.target.value, _field_value(small.value)))
            elif type(small) is cst.Assign and len(small.targets) == 1 and type(small.targets[0].target) is cst.Name:
                out.append((small.targets[0].target.value, _field_value(small.value)))
    return out


def _field_value(value: cst.BaseExpression | None) -> cst.BaseExpression | None:
    if type(value) is cst.Call and cst.helpers.get_full_name_for_node(value.func) in ("field", "dataclasses.field"):
        for arg in value.args:
            if arg.keyword is not None and arg.keyword.value == "default":
                return arg.value
            if arg.keyword is not None and arg.keyword.value == "default_factory" and type(arg.value) is cst.Lambda:
                return arg.value.body
        return None
    return value


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
        forward, grads = _run_times(index, record)
        record.variable_reads = _merged(forward_finder.reads(f, record, helpers=2) for f in forward)
        for grad in record.grads:
            grad.variable_reads = _merged(grad_finder.reads(f, record, created_ok=False) for f in grads[id(grad.node)])


def _run_times(index: FileIndex, record: CustomGradient) -> tuple[list[FuncNode], dict[int, list[FuncNode]]]:
    """The functions that run with the forward, and with each grad: functions nested in a grad run
    with it, and so does a def nested in the forward that only a grad names (a helper of grad);
    the other nested functions run with the forward (tf.cond branches, local helpers, lambdas)."""
    bodies = all_bodies(index, record)
    grads = {id(g.node): [g.node] for g in record.grads}
    forward: list[FuncNode] = [record.node]
    named_in: dict[str, list[int]] = {}  # name -> the grads (ids) that mention it
    for body in bodies:
        if body.in_grad:
            for node in index.walk.function_nodes(body.func):
                if type(node) is cst.Name:
                    named_in.setdefault(node.value, []).append(id(body.top))
    forward_names = {node.value for b in bodies if not b.in_grad
                     for node in index.walk.function_nodes(b.func) if type(node) is cst.Name}
    grad_time: dict[int, int] = {}  # a def nested in the forward -> the grad it runs with
    for body in bodies:
        if not body.nested:
            continue
        if body.in_grad:
            grads[id(body.top)].append(body.func)
            continue
        owner = body.func
        while owner is not None and owner is not record.node and id(owner) not in grad_time:
            if type(owner) is cst.FunctionDef and owner.name.value in named_in \
                    and owner.name.value not in forward_names:
                grad_time[id(owner)] = named_in[owner.name.value][0]
                break
            owner = index.enclosing(owner, (cst.FunctionDef, cst.Lambda))  # type: ignore[assignment]
        if owner is not None and id(owner) in grad_time:
            grad_time[id(body.func)] = grad_time[id(owner)]
            grads[grad_time[id(owner)]].append(body.func)
        else:
            forward.append(body.func)
    return forward, grads


def _merged(groups: Iterator[list[VariableRead]]) -> list[VariableRead]:
    found: list[VariableRead] = []
    seen: set[str] = set()
    for group in groups:
        for read in group:
            if read.text not in seen:
                seen.add(read.text)
                found.append(read)
    return found


# modules whose names a forward may use without reading a variable of its own
_PURE_ROOTS = frozenset({"tensorflow", "numpy", "math", "functools", "operator"})
_BUILTINS = frozenset(dir(__import__("builtins")))


def _pure(name: str) -> bool:
    return name.split(".")[0] in _PURE_ROOTS or name.startswith(("keras.ops.", "keras.src.ops."))


def reads_no_variable(index: FileIndex, record: CustomGradient) -> bool:
    """The forward certainly reads no variable: besides its own parameters and locals (functions
    nested in it included) it names only TensorFlow/NumPy, builtins and module-level constants.
    Then TF calls ``grad(*upstreams)`` without ``variables``. (A closure value, an attribute of
    ``self`` or a call of anything else might read one: then we cannot tell.)"""
    key = ("reads-no-variable", id(record))
    found = index.memo.get(key)
    if found is not None:
        return bool(found)
    found = not record.variable_reads and _closed(index, [b.func for b in all_bodies(index, record) if not b.in_grad])
    index.memo[key] = found
    return found


def _closed(index: FileIndex, funcs: list[FuncNode]) -> bool:
    local = {id(index.env_for(f)) for f in funcs}
    module = index.module_env
    for func in funcs:
        for node in index.walk.function_nodes(func):
            if type(node) is not cst.Name or node.value in ("True", "False", "None"):
                continue
            parent = index.parent(node)
            if (type(parent) is cst.Attribute and parent.attr is node or type(parent) is cst.Param
                    or type(parent) is cst.Arg and parent.keyword is node):
                continue
            env = index.env_for(index.owner(node))
            while env is not None and node.value not in env.bindings and node.value not in env.params:
                env = env.parent  # type: ignore[assignment]
            if env is None:
                if node.value in _BUILTINS:
                    continue
                return False
            if id(env) in local:
                continue
            if env is not module:
                return False  # a closure value of an enclosing function: may be a variable
            names = index.qualnames(node)
            if names and all(_pure(n) for n in names):
                continue
            values = env.bindings.get(node.value, [])
            if values and all(_constant(v) for v in values):
                continue
            return False
    return True


def _constant(value: object) -> bool:
    if isinstance(value, (cst.BaseNumber, cst.BaseString)):
        return True
    if type(value) in (cst.Tuple, cst.List):
        return all(_constant(e.value) for e in value.elements)  # type: ignore[attr-defined]
    return type(value) is cst.UnaryOperation and isinstance(value.expression, cst.BaseNumber)  # type: ignore[attr-defined]

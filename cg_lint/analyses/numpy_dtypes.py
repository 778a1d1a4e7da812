"""The dtype a NumPy expression surely has, by NumPy 2's promotion rules (NEP 50), or nothing.

Used for the kernels of ``tf.numpy_function``: TF converts what the kernel returns with
``np.asarray`` and, when traced, requires the dtype ``Tout`` names. The answer is one of

- ``F64``: a float64 array or NumPy scalar (``np.zeros(n)``, ``np.random.normal()``,
  ``np.float64(x)``, ``np.array(2.0)``, and anything arithmetic makes with one of them: a strong
  float64 operand never promotes down, whatever the other side is);
- ``PYFLOAT``: a Python float (weak: ``a * 0.5`` keeps ``a``'s dtype, but returned alone it
  becomes a float64 array);
- ``PYINT``: a Python int (weak too);
- ``F32``: a float32 array or scalar (``np.float32(x)``, ``dtype=np.float32``, ``.astype``);
- ``None``: anything else, including every parameter of the kernel: quiet when unsure.
"""

from __future__ import annotations

import libcst as cst

from cg_lint.syntax.environments import Unknown
from cg_lint.syntax.index import FileIndex

F64, F32, PYFLOAT, PYINT = "float64", "float32", "python float", "python int"

_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.Power,
               cst.MatrixMultiply)
# constructors whose default dtype is float64 whatever their arguments: (name, position of dtype)
_FLOAT64_CONSTRUCTORS = {"zeros": 1, "ones": 1, "empty": 1, "eye": 3, "identity": 1}
# float64 only when start and stop are Python numbers or float64 (float32 ones keep float32)
_SPACES = {"linspace": 5, "logspace": 5, "geomspace": 4}
# np.random's legacy samplers and RandomState/Generator methods that return float64 (Generator's
# random/standard_* take a dtype; its position is given, None where there is none)
_SAMPLERS = {
    "rand": None, "randn": None, "random": 1, "random_sample": None, "ranf": None, "sample": None,
    "normal": None, "uniform": None, "standard_normal": 1, "exponential": None, "standard_exponential": 1,
    "gamma": None, "standard_gamma": 2, "beta": None, "laplace": None, "lognormal": None, "logistic": None,
    "standard_cauchy": None, "chisquare": None, "gumbel": None, "rayleigh": None, "weibull": None,
    "triangular": None, "vonmises": None, "wald": None, "pareto": None, "power": None, "standard_t": None,
}
_RNG_MAKERS = frozenset({"numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.Generator"})
# ufuncs of one float argument: a Python float becomes float64, an array keeps its float dtype
_UNARY_UFUNCS = frozenset({"exp", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "tanh", "sinh", "cosh",
                           "arctan", "arcsin", "arccos", "square", "abs", "absolute", "negative", "reciprocal",
                           "exp2", "log2", "log10", "fabs", "floor", "ceil", "rint", "sign", "cbrt"})
_BINARY_UFUNCS = frozenset({"add", "subtract", "multiply", "divide", "true_divide", "maximum", "minimum",
                            "power", "arctan2", "hypot", "fmax", "fmin", "matmul", "dot"})
# methods of an array that keep its dtype
_KEEP_DTYPE = frozenset({"sum", "mean", "max", "min", "reshape", "copy", "clip", "transpose", "ravel", "flatten",
                         "squeeze", "cumsum", "prod", "std", "var", "T", "real", "swapaxes", "repeat", "take"})
_COMBINING = frozenset({"sum", "mean", "max", "min", "prod", "std", "var", "reshape", "transpose", "clip", "squeeze",
                        "concatenate", "stack"})
_FLOAT64_NAMES = frozenset({"numpy.float64", "numpy.double", "numpy.float_", "float", "tensorflow.float64"})
_FLOAT32_NAMES = frozenset({"numpy.float32", "numpy.single", "tensorflow.float32"})
_FLOAT64_STRINGS = frozenset({"float64", "f8", "double", "<f8", "d", "float"})
_FLOAT32_STRINGS = frozenset({"float32", "f4", "single", "<f4", "f"})


class NumpyDtypes:
    """Infers dtypes in one kernel (a def or lambda); names are looked up in its environment."""

    def __init__(self, index: FileIndex) -> None:
        self.ix = index
        self._visiting: set[int] = set()

    def of(self, expr: cst.BaseExpression | None) -> str | None:
        if expr is None:
            return None
        kind = type(expr)
        if kind is cst.Float:
            return PYFLOAT
        if kind is cst.Integer:
            return PYINT
        if kind is cst.UnaryOperation and type(expr.operator) in (cst.Minus, cst.Plus):  # type: ignore[attr-defined]
            return self.of(expr.expression)  # type: ignore[attr-defined]
        if kind is cst.BinaryOperation:
            if type(expr.operator) not in _ARITHMETIC:  # type: ignore[attr-defined]
                return None
            return _promote(self.of(expr.left), self.of(expr.right),  # type: ignore[attr-defined]
                            divide=type(expr.operator) is cst.Divide)  # type: ignore[attr-defined]
        if kind is cst.Name:
            return self._name(expr)  # type: ignore[arg-type]
        if kind is cst.Call:
            return self._call(expr)  # type: ignore[arg-type]
        if kind is cst.Attribute and expr.attr.value in ("T", "real"):  # type: ignore[attr-defined]
            return _array(self.of(expr.value))  # type: ignore[attr-defined]
        if kind is cst.Subscript:
            return _array(self.of(expr.value))  # type: ignore[attr-defined]
        return None

    def _name(self, name: cst.Name) -> str | None:
        owner = self.ix.enclosing(name, (cst.FunctionDef, cst.Lambda))
        if owner is None:
            return None  # module-level values may be blanked by the reduction: unknown
        env = self.ix.env_for(owner)
        values = env.lookup(name.value)
        if not values or id(name) in self._visiting:
            return None  # a parameter, a global, or a name defined in terms of itself
        plain = [v for v in values if not _augmented(v, name.value)]
        augmented = [v for v in values if _augmented(v, name.value)]
        if not plain or any(isinstance(v, Unknown) or not isinstance(v, cst.BaseExpression) for v in plain):
            return None
        self._visiting.add(id(name))
        try:
            kinds = {self.of(v) for v in plain}
            if len(kinds) != 1:
                return None
            base = kinds.pop()
            for aug in augmented:  # `out += x`: in place on an array, keeps a float64 array float64
                other = self.of(aug.right)
                if _promote(base, other, divide=type(aug.operator) is cst.Divide) != base:
                    return None
        finally:
            self._visiting.discard(id(name))
        return base

    def _call(self, call: cst.Call) -> str | None:
        func = call.func
        if type(func) is cst.Attribute and type(func.value) is not cst.Name and type(func.value) is not cst.Attribute:
            inner = func.value
            if type(inner) is cst.Call and self._called(inner) in _RNG_MAKERS:
                return self._sampler(func.attr.value, call)
            return self._method(func.attr.value, self.of(inner), call)
        name = self._called(call)
        if name is None:
            if type(func) is cst.Attribute:  # `rng.normal()`, `arr.astype()` on a local name
                if type(func.value) is cst.Name and self._rng(func.value):
                    return self._sampler(func.attr.value, call)
                return self._method(func.attr.value, self.of(func.value), call)
            return None
        if name == "float":
            return PYFLOAT if len(call.args) <= 1 else None
        if not name.startswith("numpy."):
            if type(func) is cst.Attribute and type(func.value) is cst.Name and name.count(".") == 1:
                # `x.astype(...)` where x is a local: qualnames resolve only imported bases
                return self._method(func.attr.value, self.of(func.value), call)
            return None
        return self._numpy(name[len("numpy."):], call)

    def _numpy(self, short: str, call: cst.Call) -> str | None:
        """``np.<short>(...)``."""
        if short in ("float64", "double", "float_"):
            return F64
        if short in ("float32", "single"):
            return F32
        if short.startswith("random.") and short.count(".") == 1:
            return self._sampler(short.split(".", 1)[1], call)
        if "." in short:
            return None
        if short in _FLOAT64_CONSTRUCTORS:
            return self._with_dtype(call, _FLOAT64_CONSTRUCTORS[short], F64)
        if short == "full":
            fill = _argument(call, 1, "fill_value")
            return self._with_dtype(call, 2, F64 if self.of(fill) in (F64, PYFLOAT) else None)
        if short in _SPACES:
            ends = {self.of(_argument(call, 0, "start")), self.of(_argument(call, 1, "stop"))}
            return self._with_dtype(call, _SPACES[short], F64 if ends <= {F64, PYFLOAT, PYINT} else None)
        if short == "arange":
            numbers = {self.of(a.value) for a in call.args if a.keyword is None}
            floats = numbers & {PYFLOAT, F64}
            return self._with_dtype(call, 3, F64 if floats and numbers <= {F64, PYFLOAT, PYINT} else None)
        if short in ("array", "asarray", "asanyarray", "ascontiguousarray"):
            first = _argument(call, 0, "object")
            return self._with_dtype(call, 1, self._literal_array(first))
        if short in _UNARY_UFUNCS and len(call.args) == 1:
            return _array(_strong(self.of(call.args[0].value)))
        if short in _BINARY_UFUNCS and len(call.args) == 2 and not any(a.keyword for a in call.args):
            return _promote(self.of(call.args[0].value), self.of(call.args[1].value), divide=short.endswith("divide"))
        return self._reduction(short, call)

    def _reduction(self, short: str, call: cst.Call) -> str | None:
        """``np.sum(a)``, ``np.concatenate([a, b])``...: the dtype of what they combine."""
        if short not in _COMBINING or not call.args or any(a.keyword and a.keyword.value == "dtype"
                                                            for a in call.args):
            return None
        first = call.args[0].value
        if short in ("concatenate", "stack"):
            if type(first) not in (cst.List, cst.Tuple):
                return None
            kinds = {self.of(e.value) for e in first.elements}  # type: ignore[attr-defined]
            return F64 if kinds == {F64} else None
        return _array(self.of(first))

    def _called(self, call: cst.Call) -> str | None:
        names = self.ix.qualnames(call.func)
        return sorted(names)[0] if names else None

    def _rng(self, name: cst.Name) -> bool:
        """A local name bound only to ``np.random.default_rng(...)`` / ``RandomState(...)``."""
        owner = self.ix.enclosing(name, (cst.FunctionDef, cst.Lambda))
        if owner is None:
            return False
        values = self.ix.env_for(owner).lookup(name.value) or []
        return bool(values) and all(type(v) is cst.Call and self._called(v) in _RNG_MAKERS for v in values)

    def _sampler(self, method: str, call: cst.Call) -> str | None:
        if method not in _SAMPLERS:
            return None
        position = _SAMPLERS[method]
        return self._with_dtype(call, position, F64) if position is not None else (
            F64 if not any(a.keyword and a.keyword.value == "dtype" for a in call.args) else None)

    def _method(self, method: str, base: str | None, call: cst.Call) -> str | None:
        if method == "astype" and call.args:
            return self._dtype(call.args[0].value)
        if method in _KEEP_DTYPE and base in (F64, F32) and not any(
                a.keyword and a.keyword.value in ("dtype", "out") for a in call.args):
            return base
        return None

    def _with_dtype(self, call: cst.Call, position: int | None, default: str | None) -> str | None:
        """``default`` unless a dtype is given (by keyword or at ``position``): then that dtype's."""
        given = _argument(call, position, "dtype")
        if given is None:
            return default
        return self._dtype(given)

    def _dtype(self, expr: cst.BaseExpression) -> str | None:
        if type(expr) is cst.Name and expr.value == "None":
            return F64  # dtype=None is the float64 default
        if type(expr) is cst.SimpleString:
            text = expr.evaluated_value
            return F64 if text in _FLOAT64_STRINGS else F32 if text in _FLOAT32_STRINGS else None
        names = self.ix.qualnames(expr)
        if names & _FLOAT64_NAMES:
            return F64
        if names & _FLOAT32_NAMES:
            return F32
        return None

    def _literal_array(self, expr: cst.BaseExpression | None) -> str | None:
        """``np.array``'s dtype from its argument: float64 from floats and float64 values."""
        if expr is None:
            return None
        if type(expr) in (cst.List, cst.Tuple):
            kinds = [self._literal_array(e.value) if type(e.value) in (cst.List, cst.Tuple) else self.of(e.value)
                     for e in expr.elements]  # type: ignore[attr-defined]
            if not kinds or any(k not in (F64, PYFLOAT, PYINT) for k in kinds):
                return None
            return F64 if any(k in (F64, PYFLOAT) for k in kinds) else None
        kind = self.of(expr)
        return F64 if kind in (F64, PYFLOAT) else F32 if kind == F32 else None


def _augmented(value: object, name: str) -> bool:
    """The binding the environment records for ``name += x`` (a BinaryOperation on the name)."""
    return (type(value) is cst.BinaryOperation and type(value.left) is cst.Name  # type: ignore[attr-defined]
            and value.left.value == name)  # type: ignore[attr-defined]


def _argument(call: cst.Call, position: int | None, keyword: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if position is not None and position < len(positional):
        return positional[position].value
    return None


def _strong(kind: str | None) -> str | None:
    """A Python float handed to NumPy alone becomes a float64 scalar."""
    return F64 if kind == PYFLOAT else kind


def _array(kind: str | None) -> str | None:
    return kind if kind in (F64, F32) else None


def _promote(left: str | None, right: str | None, divide: bool = False) -> str | None:
    """NEP 50: a strong float64 wins over anything; Python numbers are weak (they take the other
    side's dtype); two Python numbers stay Python numbers."""
    if F64 in (left, right):
        return F64
    if left is None or right is None:
        return None
    if left == right:
        return PYFLOAT if left == PYINT and divide else left
    if {left, right} == {PYFLOAT, PYINT}:
        return PYFLOAT
    if F32 in (left, right) and {left, right} <= {F32, PYFLOAT, PYINT}:
        return F32
    return None

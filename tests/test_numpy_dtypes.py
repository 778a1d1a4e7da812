"""The NumPy dtypes CG016 infers agree with what NumPy itself computes.

Each kernel is inferred statically, then run with NumPy on inputs of several dtypes (the kernel's
parameter is whatever tensor TF hands it): a claim must hold for every one of them, and the expected
claims keep the inference from going quiet where it should not.
"""

from __future__ import annotations

import textwrap

import libcst as cst
import numpy as np
import pytest

from cg_lint.analyses.numpy_dtypes import F32, F64, PYFLOAT, PYINT, NumpyDtypes
from cg_lint.analyses.tensors import return_values
from cg_lint.prefilter.prepared import prepare
from cg_lint.syntax.index import FileIndex

INPUT_DTYPES = (np.float16, np.float32, np.float64, np.int32, np.int64)

CASES = [
    # constructors: float64 unless a dtype says otherwise
    ("np.zeros(3)", F64), ("np.zeros(3, np.float32)", F32), ("np.zeros(3, dtype=None)", F64),
    ("np.ones((2,), 'float32')", F32), ("np.empty(3)", F64), ("np.eye(3)", F64),
    ("np.eye(3, 3, 0, np.float32)", F32), ("np.identity(2)", F64),
    ("np.array([1.0, 2.0])", F64), ("np.array([1, 2])", None), ("np.array(2.0)", F64),
    ("np.array([[1.0], [2.0]])", F64), ("np.array([a.sum(), 1.0])", None), ("np.asarray(0.5)", F64),
    ("np.full(3, 0.5)", F64), ("np.full(3, 0)", None), ("np.arange(0.0, 1.0, 0.25)", F64),
    ("np.arange(3)", None), ("np.linspace(0, 1, 5)", F64), ("np.linspace(a[0], a[1], 5)", None),
    # samplers
    ("np.random.normal(size=3)", F64), ("np.random.rand(3)", F64), ("np.random.uniform(a, a + 1)", F64),
    ("np.random.default_rng(0).standard_normal(3)", F64),
    ("np.random.default_rng(0).standard_normal(3, np.float32)", F32),
    ("np.random.default_rng(0).random(3, dtype=np.float32)", F32), ("np.random.randint(0, 3, 3)", None),
    # promotion (NEP 50): Python numbers are weak, NumPy float64 values strong
    ("a * 0.5", None), ("a * 0.5 + 1", None), ("a * np.float64(0.5)", F64), ("a * np.array(0.5)", F64),
    ("a + np.ones(3)", F64), ("a.astype(np.float32) * 0.5", F32), ("np.float32(2.0) * 2.0", F32),
    ("np.float32(2.0) * np.float64(2.0)", F64), ("np.float32(1.0) / 3", F32), ("a / 3", None),
    ("1.0", PYFLOAT), ("float(a.sum())", PYFLOAT), ("2 / 4", PYFLOAT), ("2 * 3", PYINT),
    ("np.exp(2.0)", F64), ("np.exp(a)", None), ("np.sqrt(np.ones(3))", F64), ("np.maximum(a, 0.0)", None),
    ("np.maximum(a, np.zeros(3))", F64), ("-np.ones(3)", F64), ("np.ones(3)[0]", F64), ("np.ones(3).T", F64),
    # reductions and methods keep the dtype
    ("np.sum(np.ones(3))", F64), ("np.ones(3).sum()", F64), ("np.ones(3).astype(np.float32)", F32),
    ("np.concatenate([np.ones(2), np.zeros(2)])", F64), ("np.mean(a)", None), ("a.astype(float)", F64),
    # local names, in-place updates
    ("m = np.zeros(3)\nm[0] = 1.0\nreturn m", F64),
    ("out = np.zeros(3, np.float32)\nout += np.ones(3)\nreturn out", None),  # in place: float32, unsure
    ("s = np.float32(1.0)\ns += np.ones(3)\nreturn s", None),
    ("out = np.zeros(3)\nout *= a\nreturn out", F64),
    ("rng = np.random.default_rng(1)\nreturn rng.normal(size=3)", F64),
    ("scale = 0.5\nreturn a * scale", None), ("scale = np.float64(0.5)\nreturn a * scale", F64),
]


def _kernel(body: str) -> str:
    if "return" not in body:
        body = f"return {body}"
    return "import numpy as np\n# custom_gradient\n\ndef k(a):\n" + textwrap.indent(body, "    ") + "\n"


def _inferred(source: str) -> str | None:
    prepared = prepare(source, "k.py", ("custom_gradient",), gates=False, reduce=False)
    index = FileIndex(prepared)  # type: ignore[arg-type]
    kernel = next(s for s in index.module.body if type(s) is cst.FunctionDef)
    (value,) = return_values(index, kernel)
    return NumpyDtypes(index).of(value)


def _run(source: str, dtype: type) -> object:
    scope: dict[str, object] = {}
    exec(compile(source, "k.py", "exec"), scope)  # noqa: S102 - the test's own kernels
    return scope["k"](np.arange(1, 4).astype(dtype))  # type: ignore[operator]


@pytest.mark.parametrize(("body", "expected"), CASES, ids=[c[0].replace("\n", "; ") for c in CASES])
def test_inferred_dtype_is_numpys(body: str, expected: str | None) -> None:
    source = _kernel(body)
    inferred = _inferred(source)
    assert inferred == expected
    for dtype in INPUT_DTYPES:
        result = _run(source, dtype)
        if inferred == PYFLOAT:
            assert type(result) is float and np.asarray(result).dtype == np.float64
        elif inferred == PYINT:
            assert type(result) is int
        elif inferred == F64:
            assert np.asarray(result).dtype == np.float64, dtype
        elif inferred == F32:
            assert np.asarray(result).dtype == np.float32, dtype


def test_numpy_is_2_with_nep50_promotion() -> None:
    # the rules above are NumPy 2's; NumPy 1 made `float32_array * np.float64(0.5)` float32
    assert (np.ones(2, np.float32) * np.float64(0.5)).dtype == np.float64
    assert (np.ones(2, np.float32) * 0.5).dtype == np.float32

"""Keras layers whose custom gradient runs only after ``layer.quantize(mode)``, checked with no
configuration: one entry per mode the layer's source names, the layer built by one call and
quantized before the check (real Keras and TensorFlow in a subprocess)."""

from __future__ import annotations

import ast
import importlib.util
import re
import textwrap
from pathlib import Path

import pytest

from runtime_check.layers import documented_arguments, modes_reaching, other_backend_only

FIXTURE = "quantized_layers.py"


@pytest.fixture(scope="module")
def quantized(cli):
    from conftest import Results

    return Results(cli("--format", "json", FIXTURE)), cli(FIXTURE)


def _rows(text: str, prefix: str) -> dict[str, str]:
    """The summary table's rows that start with ``prefix``: function -> result."""
    cells = [re.split(r"\s{2,}", ln) for ln in text.splitlines() if ln.startswith(prefix)]
    return {c[0]: c[1] for c in cells if len(c) > 1}


@pytest.mark.tf
def test_seeded_defect_in_the_int8_path_is_reported_eagerly_and_traced(quantized):
    results, _ = quantized
    assert results.completed.returncode == 1, results.completed.stderr[-2000:]
    finding = results.one("SkewedQuantizedDense._dequantized_matmul.<locals>.int8_matmul", "CG101")
    assert "gradient for input 'x' has shape (1, " in finding["message"]
    # both modes saw it, and the report says under which quantization mode
    assert "[eager, tf.function; inputs inputs: float32[" in finding["message"]
    assert "after quantize('int8'); " in finding["message"]
    # and how the inputs came: a Keras layer's weights come from its build
    assert finding["message"].endswith("; weights from the layer's build(input_shape)]")
    assert results.codes("SkewedQuantizedDense._dequantized_matmul.<locals>.int8_matmul") == {"CG101"}


@pytest.mark.tf
def test_correct_quantized_layer_gets_no_finding(quantized):
    results, text = quantized
    # the int8 kernel and its non-trainable scale get None: not CG104
    assert [f for f in results.findings if "QuantizableEinsumDense" in f["function"]] == []
    row = next(ln for ln in text.stdout.splitlines() if ln.startswith(f"{FIXTURE}:QuantizableEinsumDense"))
    # built from the docstring example's equation, then quantized
    assert row.split()[:2] == [f"{FIXTURE}:QuantizableEinsumDense[int8]", "ok"], text.stdout
    assert "after quantize('int8')" in row


@pytest.mark.tf
def test_configuration_written_in_the_tests_reaches_its_own_path(quantized):
    """``quantize("int8")`` takes the correct path; the configuration ``quantized_layers_test.py``
    writes with literals takes the weight-only path, whose seeded float64 gradient is reported."""
    results, text = quantized
    finding = results.one("WeightOnlyDense._matmul.<locals>.weight_only_matmul", "CG102")
    assert "gradient for input 'x' has dtype float64 but the input is float32" in finding["message"]
    assert "[eager, tf.function; inputs inputs: float32[" in finding["message"]
    assert "after quantize('int8', config=Int8QuantizationConfig(activation_quantizer=None)); " \
        in finding["message"]
    rows = _rows(text.stdout, f"{FIXTURE}:WeightOnlyDense[")
    assert len(rows) == 2, text.stdout
    assert rows[f"{FIXTURE}:WeightOnlyDense[int8]"] == "ok", text.stdout


@pytest.mark.tf
def test_mode_that_needs_a_configuration_gets_one_line(quantized):
    results, text = quantized
    note = results.one("GptqDense[gptq]", "CG130")
    assert "GptqDense.quantize('gptq') raised ValueError: For GPTQ, you must pass a `GPTQConfig`" in note["message"]
    assert "\n" not in note["message"] and "Traceback" not in text.stdout + text.stderr
    # a note, not a failure: the run fails only over the seeded defect
    assert text.stdout.rstrip().endswith("5 function(s) checked, 2 finding(s)"), text.stdout


@pytest.mark.tf
@pytest.mark.slow
def test_keras_dense_quantized_paths(cli, tmp_path):
    """Keras's own Dense: int8 and int4 are checked clean (their non-trainable scales get None on
    purpose); nothing reports CG104."""
    spec = importlib.util.find_spec("keras")
    if spec is None or spec.origin is None:
        pytest.skip("keras is not installed")
    dense = Path(spec.origin).parent / "src" / "layers" / "core" / "dense.py"
    if not dense.is_file():
        pytest.skip("this Keras has no keras/src/layers/core/dense.py")
    from conftest import Results

    results = Results(cli("--format", "json", str(dense), cwd=tmp_path))
    assert not [f for f in results.findings if f["code"] in ("CG104", "CG130")], results.findings
    text = cli(str(dense), cwd=tmp_path).stdout
    rows = {name.rsplit(":", 1)[-1]: result for name, result in _rows(text, str(dense)).items()}
    assert rows.get("Dense[int8]") == "ok" and rows.get("Dense[int4]") == "ok", text
    assert "Dense[float8]" in rows, text
    if (dense.parent / "dense_test.py").is_file():  # int4 per channel: a configuration Keras's tests write
        assert rows.get("Dense[int4, Int4QuantizationConfig(block_size=None)]") == "ok", text


# -- the parts without TensorFlow ---------------------------------------------------------------------

SOURCE = textwrap.dedent('''
    class Layer:
        def _int4_call(self, x):
            return self._shared(x)

        def _shared(self, x):
            def inner(x): ...

        def _both(self, x):
            def inner(x): ...

        def quantized_call(self, x):
            if self.quantization_mode in ("int8", "int4"):
                return self._dequantized(x)
            self._both(x)
            return x

        def _dequantized(self, x):
            def inner(x): ...

        def _float8_call(self, x):
            def inner(x): ...

        def call(self, x):
            self._both(x)
            if mode == "gptq":
                def inner(x): ...
            def plain(x): ...
''')


def _line(name: str, method: str) -> int:
    tree = ast.parse(SOURCE)
    cls = tree.body[0]
    function = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == method)
    return next(n.lineno for n in ast.walk(function) if isinstance(n, ast.FunctionDef) and n.name == name)


@pytest.mark.parametrize("method, name, modes", [
    ("_dequantized", "inner", ["int8", "int4"]),  # called from a branch on the mode
    ("_float8_call", "inner", ["float8"]),  # named for the mode, as Keras dispatches it
    ("call", "inner", ["gptq"]),  # defined in a branch on the mode
    ("call", "plain", []),  # the plain call reaches it
    ("_shared", "inner", ["int4"]),  # a helper only a quantized method calls
    ("_both", "inner", []),  # a helper the plain call calls too
])
def test_modes_reaching_a_definition(method, name, modes):
    assert modes_reaching(ast.parse(SOURCE), "Layer", method, _line(name, method)) == modes


class Documented:
    """A thing.

    >>> thing = Documented("ab,bc->ac", units=4, name="x")

    ```python
    other = Documented(make_equation())
    ```
    """

    def __init__(self, equation, units=2, **kwargs):
        self.equation, self.units, self.kwargs = equation, units, kwargs


class Undocumented:
    """Its only example passes a computed value: ``Undocumented(x)`` is no literal.

    >>> Undocumented(compute())
    """

    def __init__(self, equation):
        self.equation = equation


def test_documented_arguments_come_from_a_literal_docstring_example():
    assert documented_arguments(Documented) == {"equation": "ab,bc->ac", "units": 4, "name": "x"}
    assert documented_arguments(Undocumented) is None


BACKENDS = textwrap.dedent('''
    def fake_quant(x, axis=None):
        if backend.backend() == "tensorflow":
            if axis is None:
                return tf_op(x)
            else:
                return tf_op_per_channel(x)

        @ops.custom_gradient
        def other_backends(x):
            ...

    def guarded(x):
        if keras.backend.backend() != "tensorflow":
            @ops.custom_gradient
            def only_elsewhere(x):
                ...

    def maybe(x):
        if backend.backend() == "tensorflow":
            x = x + 1

        @ops.custom_gradient
        def everywhere(x):
            ...
''')


@pytest.mark.parametrize("outer, inner, why", [
    ("fake_quant", "other_backends", "runs only under another Keras backend (line 3 returns first"),
    ("guarded", "only_elsewhere", "defined only when the Keras backend is not TensorFlow (line 14)"),
    ("maybe", "everywhere", None),  # the TensorFlow branch does not return: reached under TensorFlow too
])
def test_custom_gradients_only_another_keras_backend_reaches(outer, inner, why):
    tree = ast.parse(BACKENDS)
    line = next(n.lineno for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == inner)
    found = other_backend_only(tree, outer, line)
    assert (found is None) if why is None else (why in (found or "")), found

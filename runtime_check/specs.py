"""Declared inputs and options: the meaning of ``[tool.cg_lint.runtime]``, which cg_lint's project
configuration (``cg_lint.config``) finds and reads with the rest of ``[tool.cg_lint]``.

Schema (every key optional; unknown keys are an error naming the key)::

    [tool.cg_lint.runtime]
    timeout = 60            # seconds per function
    jit = false             # also trace with jit_compile=True
    numeric = false         # numerical gradient check (for exact gradients)
    zero-upstream = false   # grad must vanish when its upstream does
    magnitudes = true       # probe ±100 and 0 for NaN/Inf gradients
    second-order = false    # grad must itself be differentiable (Hessian-vector products)

    [tool.cg_lint.runtime.functions."pkg.module:Class.method"]
    inputs = [{shape = [4, 3], dtype = "float32"}, {value = 2}]   # one entry per positional input
    cases = [[{shape = [3]}], [{shape = [2, 3]}]]                  # or several input sets
    init = {units = 4}                                             # constructor (or factory) arguments
    ignore = ["CG104"]                                             # silence these codes for this function

An input is ``{shape, dtype}`` (values are synthesized, mixed signs, not all ones), optionally with
``value`` (a number or nested list filling the tensor), or only ``value`` for a Python argument.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from cg_lint.config import ConfigError, Settings

TOP_KEYS = {"timeout", "jit", "numeric", "zero-upstream", "magnitudes", "second-order", "broadcast-shapes",
            "functions"}
FUNCTION_KEYS = {"inputs", "cases", "init", "ignore"}
INPUT_KEYS = {"shape", "dtype", "value"}
DTYPES = {"float16", "bfloat16", "float32", "float64", "complex64", "complex128", "int8", "int16", "int32",
          "int64", "uint8", "bool"}


class SpecError(ConfigError):
    """A one-line error in the runtime table."""


@dataclass
class RuntimeConfig:
    path: str | None = None
    timeout: float = 60.0
    jit: bool = False
    numeric: bool = False
    zero_upstream: bool = False
    magnitudes: bool = True
    second_order: bool = False
    broadcast_shapes: bool = False
    # "module:qualname" -> {"cases": [[input, ...], ...], "init": {...}}
    functions: dict[str, dict[str, Any]] = field(default_factory=dict)


def from_settings(settings: Settings) -> RuntimeConfig:
    """The runtime table of the project's configuration, checked (``SpecError`` names a bad key)."""
    where = settings.config_file or "pyproject.toml"
    return parse(settings.runtime, where, RuntimeConfig(path=settings.config_file))


def parse(section: Any, where: str, config: RuntimeConfig | None = None) -> RuntimeConfig:
    config = config or RuntimeConfig(path=where)
    prefix = "tool.cg_lint.runtime"
    _table(section, f"{where}: {prefix}")
    _known(section, TOP_KEYS, where, prefix)
    if "timeout" in section:
        value = section["timeout"]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
            raise SpecError(f"{where}: {prefix}.timeout must be a positive number of seconds, and finite")
        config.timeout = float(value)
    for key, attribute in (("jit", "jit"), ("numeric", "numeric"), ("zero-upstream", "zero_upstream"),
                           ("magnitudes", "magnitudes"), ("second-order", "second_order"),
                           ("broadcast-shapes", "broadcast_shapes")):
        if key in section:
            if not isinstance(section[key], bool):
                raise SpecError(f"{where}: {prefix}.{key} must be true or false")
            setattr(config, attribute, section[key])
    functions = section.get("functions", {})
    _table(functions, f"{where}: {prefix}.functions")
    for name, spec in functions.items():
        key = f'{prefix}.functions."{name}"'
        if ":" not in name:
            raise SpecError(f'{where}: {key}: name functions as "package.module:qualname"')
        _table(spec, f"{where}: {key}")
        _known(spec, FUNCTION_KEYS, where, key)
        if "inputs" in spec and "cases" in spec:
            raise SpecError(f"{where}: {key}: give either inputs or cases, not both")
        cases = [spec["inputs"]] if "inputs" in spec else spec.get("cases", [])
        if not isinstance(cases, list) or not all(isinstance(c, list) for c in cases):
            raise SpecError(f"{where}: {key}: inputs must be a list of tables, cases a list of such lists")
        for case in cases:
            for number, item in enumerate(case):
                _input(item, where, f"{key}.inputs[{number}]")
        init = spec.get("init", {})
        _table(init, f"{where}: {key}.init")
        ignore = spec.get("ignore", [])
        if not isinstance(ignore, list) or not all(
                isinstance(c, str) and re.fullmatch(r"CG\d{0,3}", c) for c in ignore):
            raise SpecError(f'{where}: {key}.ignore must be a list of codes or prefixes (e.g. ["CG104"])')
        config.functions[name] = {"cases": cases, "init": dict(init), "ignore": list(ignore)}
    return config


def _table(value: Any, where: str) -> None:
    if not isinstance(value, dict):
        raise SpecError(f"{where} must be a table")


def _known(table: dict[str, Any], allowed: set[str], where: str, prefix: str) -> None:
    for key in table:
        if key not in allowed:
            raise SpecError(f"{where}: unknown key '{prefix}.{key}' (expected one of: {', '.join(sorted(allowed))})")


def _input(item: Any, where: str, key: str) -> None:
    _table(item, f"{where}: {key}")
    _known(item, INPUT_KEYS, where, key)
    if not item:
        raise SpecError(f"{where}: {key} needs shape/dtype or value")
    shape = item.get("shape")
    if shape is not None and (not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool)
                                                                     and d >= 0 for d in shape)):
        raise SpecError(f"{where}: {key}.shape must be a list of non-negative integers")
    dtype = item.get("dtype")
    if dtype is not None and dtype not in DTYPES:
        raise SpecError(f"{where}: {key}.dtype '{dtype}' is not one of: {', '.join(sorted(DTYPES))}")


def build_input_sets(cases: list[list[dict[str, Any]]], names: list[str]) -> list[Any]:
    """Input sets for the worker (imports NumPy, so only call it in the child)."""
    import numpy as np

    from .probes import InputSet, label_for, probe_array

    sets = []
    for case in cases:
        args: list[Any] = []
        for index, item in enumerate(case):
            if "shape" not in item and "dtype" not in item:
                args.append(item["value"])
                continue
            dtype = item.get("dtype", "float32")
            shape = tuple(item.get("shape", []))
            if "value" in item:
                args.append(np.broadcast_to(np.asarray(item["value"], dtype=dtype), shape).copy())
            elif dtype in ("float16", "bfloat16", "float32", "float64", "complex64", "complex128"):
                args.append(probe_array("float32" if dtype == "bfloat16" else dtype, shape, index)
                            if dtype != "bfloat16" else probe_array("float32", shape, index))
            else:
                args.append((np.arange(int(np.prod(shape)) if shape else 1) % 3 + 1).reshape(shape).astype(dtype))
        case_names = names + [f"arg{i}" for i in range(len(names), len(args))]
        sets.append(InputSet(args, label_for(case_names, args), "config", origin="declared in the configuration"))
    return sets

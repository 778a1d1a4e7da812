"""Where one entry's inputs come from: declared in the configuration, else found by the search."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..probes import InputSet


def input_sets(entry: Any, names: list[str], spec: dict[str, Any] | None, path: str) -> tuple[list[InputSet], str]:
    """(input sets to check, why none were found: one line, empty when some were)."""
    if spec and spec.get("cases"):
        from ..specs import build_input_sets

        return build_input_sets(spec["cases"], names), ""
    from .trial import discover

    qualname, callee = source_function(entry)
    sets, found = discover(entry.make, names, path, qualname, callee, getattr(entry, "defaults", None))
    quantized = getattr(entry, "quantize", None)
    if quantized:  # the report says which quantization mode the inputs were checked under
        sets = [replace(s, label=f"{s.label} after quantize({quantized})") for s in sets]
    if getattr(entry, "kind", "") == "layer":  # Keras builds the weights from the first call's shapes
        sets = [replace(s, origin=f"{s.origin}; weights from the layer's build(input_shape)") for s in sets]
    return sets, found.reason


def source_function(entry: Any) -> tuple[str, str | None]:
    """The def whose body describes the inputs, and the name its callers use (None: not called by name)."""
    qualname = entry.qualname
    if getattr(entry, "body_qualname", None):
        return entry.body_qualname, getattr(entry, "callee", None)
    if getattr(entry, "kind", "") == "layer":
        return f"{qualname}.call", None
    return qualname, qualname.rsplit(".", 1)[-1]

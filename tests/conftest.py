from __future__ import annotations

import textwrap
from pathlib import Path

import pytest


@pytest.fixture
def write(tmp_path: Path):
    """Write a dedented source file under tmp_path and return its path."""

    def _write(name: str, source: str | bytes) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(source, bytes):
            path.write_bytes(source)
        else:
            path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
        return path

    return _write

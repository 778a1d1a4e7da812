"""The project around a file: which modules it has, read and scanned only when a search needs them.

A project is the folder of the nearest ``.git``, ``pyproject.toml``, ``setup.py`` or ``setup.cfg``
above a file (an installed package in ``site-packages`` is its own project). Modules are found by
name: a search for callers of ``f`` reads only the modules whose text mentions ``f`` as a word, so a
large project costs a substring scan, and ``ast`` runs on the few modules that matter.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from cg_lint.project.layout import INSTALLED, LIBRARY_MARKERS, walk_modules
from cg_lint.project.scan import ModuleScan, scan_module
from cg_lint.sources import read_regular

# folders of a repository that are not part of the package its users import
NOT_LIBRARY = frozenset({"tests", "test", "testing", "examples", "example", "scripts", "script", "docs", "doc",
                         "benchmarks", "benchmark", "bench", "notebooks", "tutorials", "tutorial",
                         "experiments", "demo", "demos", "tools"})
# spellings of tracing in a module's text (cg_lint/project/scan.py has the exact rules)
_TRACE_MARKERS = ("tf.function", "tensorflow.function", "def_function", "@function", "def call(",
                  "def train_step(", ".map(")
MAX_BYTES = 2_000_000


class Project:
    """One project's modules; texts and scans are kept for the run."""

    def __init__(self, root: str, overlays: dict[str, str] | None = None) -> None:
        self.root = root
        self._files: list[str] | None = None
        self.overlays = overlays if overlays is not None else {}  # shared: an editor updates it
        self._texts: dict[str, str | None] = {}
        self._stamps: dict[str, object] = {}  # what fresh_text saw of each file
        self._scans: dict[str, ModuleScan] = {}
        # what other searches derive from a module's text (cg_lint/project/leads.py), with that text
        self.memo: dict[object, tuple[str, object]] = {}
        self.truncated = False
        self._traces: bool | None = None

    # -- files -------------------------------------------------------------------------------------
    def files(self) -> list[str]:
        if self._files is None:
            self._files = list(self._walk())
        return self._files

    def _walk(self) -> Iterator[str]:
        for path in walk_modules(self.root):
            if path is None:
                self.truncated = True
                return
            yield path

    def text(self, path: str) -> str | None:
        key = os.path.abspath(path)
        if key in self.overlays:
            return self.overlays[key]
        if key not in self._texts:
            data = read_regular(key, MAX_BYTES)
            self._texts[key] = data.decode("utf-8", "replace") if isinstance(data, bytes) else None
        return self._texts[key]

    def fresh_text(self, path: str) -> str | None:
        """``text``, read again when the file changed since (its size or modification time): a
        process that lives across saves (an editor's flake8) answers leads from the helper as it
        is now. One ``stat`` per call."""
        key = os.path.abspath(path)
        if key not in self.overlays:
            try:
                st = os.stat(key)
                seen: object = (st.st_mtime_ns, st.st_size)
            except OSError:
                seen = None
            if self._stamps.get(key, seen) != seen:
                self._texts.pop(key, None)
            self._stamps[key] = seen
        return self.text(key)

    def scan(self, path: str) -> ModuleScan:
        key = os.path.abspath(path)
        text = self.text(key) or ""
        found = self._scans.get(key)
        if found is None or found.text is not text:  # an overlay changed since
            found = self._scans[key] = scan_module(key, text)
        return found

    def mentioning(self, name: str) -> Iterator[str]:
        """The modules whose text has ``name`` as a word."""
        word = re.compile(rf"\b{re.escape(name)}\b")
        for path in self.files():
            text = self.text(path)
            if text is not None and name in text and word.search(text):
                yield path

    def traces_anywhere(self) -> bool:
        """Whether any module shows tracing (a tf.function, a Keras step or layer call): a library
        without any is eager by design, and its users are not expected to trace it."""
        if self._traces is None:
            self._traces = any(
                text is not None and any(m in text for m in _TRACE_MARKERS)
                for text in (self.text(p) for p in self.files()))
        return self._traces

    def relative(self, path: str) -> str:
        try:
            return os.path.relpath(path, self.root)
        except ValueError:
            return path

    # -- libraries -------------------------------------------------------------------------------
    def library_package(self, path: str) -> str | None:
        """The importable package ``path`` belongs to when the project is an installable library
        (or installed): users of a library may call its public functions under ``tf.function``."""
        parts = Path(os.path.abspath(path)).parts
        for marker in INSTALLED:
            if marker in parts:
                at = parts.index(marker)
                return parts[at + 1] if len(parts) > at + 2 else None
        root = Path(self.root)
        if not any((root / m).is_file() for m in LIBRARY_MARKERS):
            return None
        rel = Path(self.relative(path)).parts
        if rel and rel[0] == "src":
            root, rel = root / "src", rel[1:]
        if len(rel) < 2 or rel[0] in NOT_LIBRARY or not (root / rel[0] / "__init__.py").is_file():
            return None
        if any(p in NOT_LIBRARY or p.startswith("_") and p != "__init__.py" for p in rel[1:]):
            return None
        return rel[0]

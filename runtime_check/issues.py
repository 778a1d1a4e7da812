"""What a check records (an :class:`Issue`) and where it records it (the :class:`Recorder`).

Kept free of TensorFlow so the parent process and the pytest plugin can import it cheaply.
"""

from __future__ import annotations

import contextlib
import functools
import linecache
import re
import threading
from dataclasses import dataclass, field
from collections.abc import Callable, Iterator
from typing import Any

from cg_lint.codes import CODES, Code, lookup

_CODE_IN_MESSAGE = re.compile(r"\b(CG\d{3}): ")


class CustomGradientCheckError(Exception):
    """Raised by the checked decorator where TensorFlow would fail anyway, with a clearer message.

    It derives directly from ``Exception`` and keeps ``Exception.__init__``: AutoGraph re-creates
    exceptions raised inside ``tf.function`` and keeps the type only for such classes. The code
    therefore travels in the message (``"CG003: ..."``), not in an attribute.
    """


def check_error(code: Code, message: str) -> CustomGradientCheckError:
    return CustomGradientCheckError(f"{code}: {message}")


def code_of_check_error(exc: BaseException) -> Code | None:
    if not isinstance(exc, CustomGradientCheckError):
        return None
    match = _CODE_IN_MESSAGE.search(str(exc))
    return CODES.get(match.group(1)) if match else None


def check_error_detail(exc: BaseException) -> str:
    """The checker's own sentence, without AutoGraph's 'in user code:' preamble."""
    text = str(exc)
    match = _CODE_IN_MESSAGE.search(text)
    if not match:
        return text.strip().splitlines()[-1] if text.strip() else type(exc).__name__
    return text[match.end():].strip().splitlines()[0]


@dataclass(frozen=True)
class DefInfo:
    """Where a custom-gradient function is defined: enough to report a finding on it."""

    qualname: str
    module: str
    path: str | None
    line: int
    column: int

    @property
    def key(self) -> str:
        return f"{self.path}:{self.line}:{self.qualname}"


def definition_info(func: Callable[..., Any]) -> DefInfo:
    """Locate ``func``'s ``def`` (or ``lambda``) line, skipping decorator lines."""
    raw = getattr(func, "__func__", func)  # staticmethod / classmethod objects
    code = getattr(raw, "__code__", None)
    qualname = getattr(raw, "__qualname__", None) or getattr(raw, "__name__", None) or repr(raw)
    module = getattr(raw, "__module__", None) or "?"
    if code is not None:
        # the def's own names: ``functools.wraps(f)`` under the decorator copies f's onto it
        qualname = getattr(code, "co_qualname", None) or qualname
        module = getattr(raw, "__globals__", {}).get("__name__") or module
    if code is None:
        return DefInfo(qualname, module, None, 1, 1)
    path = code.co_filename
    line = code.co_firstlineno
    column = 1
    # co_firstlineno is the first decorator's line; findings go on the def line like cg-lint's.
    for offset in range(0, 50):
        text = linecache.getline(path, line + offset)
        if not text:
            break
        stripped = text.lstrip()
        if stripped.startswith("@") or not stripped.strip() or stripped.startswith("#"):
            continue
        for keyword in ("async def ", "def ", "lambda"):
            at = text.find(keyword)
            if at >= 0:
                line, column = line + offset, at + 1
                break
        break
    return DefInfo(qualname, module, path, line, column)


def definition_identity(func: Callable[..., Any]) -> tuple[tuple[str, int, str], ...]:
    """What a custom-gradient function computes, as code locations: its own and its closure's.

    One wrapper can serve many functions (TensorFlow Probability's internal ``custom_gradient``
    helper, a user's decorator factory): every instance shares the wrapper's code and differs only
    in the callables it closes over, so those are part of the identity. Plain values in the closure
    (a hyper-parameter of a factory) are not: they do not make another definition.
    """
    raw = getattr(func, "__func__", func)
    parts = [_code_location(raw) or ("?", 0, repr(type(raw)))]
    for cell in getattr(raw, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell: a name assigned later in the enclosing scope
            continue
        location = _code_location(value)
        if location is not None:
            parts.append(location)
    return tuple(parts)


def _code_location(value: Any) -> tuple[str, int, str] | None:
    for _ in range(8):  # unwrap partials, bound methods and decorators (bounded: cycles exist)
        if isinstance(value, functools.partial):
            value = value.func
        elif hasattr(value, "__func__"):
            value = value.__func__
        elif getattr(value, "__code__", None) is None and hasattr(value, "__wrapped__"):
            value = value.__wrapped__
        else:
            break
    code = getattr(value, "__code__", None)
    if code is not None:
        name = getattr(value, "__qualname__", None) or code.co_name
        return (code.co_filename, code.co_firstlineno, str(name))
    if callable(value):  # a builtin (its own name) or an object with __call__ (its class)
        kind = type(value)
        module = getattr(value, "__module__", None) or getattr(kind, "__module__", "?")
        return (str(module), 0, str(getattr(value, "__qualname__", None) or kind.__qualname__))
    return None


@dataclass
class Issue:
    """One problem seen at runtime, before it becomes a :class:`cg_lint.findings.Finding`."""

    definition: DefInfo
    code: str
    message: str
    mode: str
    # what the issue is about: an input or variable name, "" for the function as a whole
    subject: str = ""
    inputs: str = ""
    # how those inputs were chosen ("from the call at ops.py:12", "guessed", ...); "" when unknown
    origin: str = ""
    # the function the call came through when the definition is a library's or factory's inner
    # function (TFP's helper wrapper): "module:qualname", "" when it was called directly
    via: str = ""

    def key(self) -> tuple[str, str, str, str]:
        # one issue per public function: functions sharing one wrapper are reported each
        return (self.definition.key, self.code, self.subject, self.via)

    def via_note(self, besides: str = "") -> str:
        """' (reached through 'igammainv' in tfp.math.special)', unless that is ``besides``."""
        if not self.via:
            return ""
        module, _, qualname = self.via.partition(":")
        if qualname in (besides, self.definition.qualname):
            return ""
        return f" (reached through '{qualname}' in {module})"

    def details(self) -> str:
        """The bracketed tail of a finding: the modes, the inputs and how they were chosen."""
        parts = [self.mode] + ([f"inputs {self.inputs}"] if self.inputs else [])
        return "; ".join(parts + ([self.origin] if self.inputs and self.origin else []))


@dataclass
class _ThreadState(threading.local):
    mode_label: str | None = None
    inputs_label: str = ""
    inputs_origin: str = ""
    shadow_depth: int = 0
    # the probe's own arguments and their names: a wrapper taking ``*args`` names them by these
    arg_names: tuple[tuple[Any, str], ...] = ()
    # set while the pytest plugin re-runs a call: (definition key, the function the original call
    # came through), so the re-run's issues name it too
    shadow_via: tuple[str, str] | None = None
    # codes recorded under another code (and a note; no code: dropped), while inputs the search
    # made up run
    renamed: dict[str, tuple[str, str]] | None = None


@dataclass
class Recorder:
    """Collects issues from every checked call; thread-safe, deduplicated by (function, code, subject)."""

    issues: list[Issue] = field(default_factory=list)
    calls: dict[str, DefInfo] = field(default_factory=dict)
    call_count: int = 0
    _seen: dict[tuple[str, str, str, str], Issue] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    state: _ThreadState = field(default_factory=_ThreadState)

    def record(self, definition: DefInfo, code: str, message: str, mode: str, subject: str = "",
               via: str = "") -> None:
        shadow = self.state.shadow_via
        if not via and shadow is not None and shadow[0] == definition.key:
            via = shadow[1]
        renamed = (self.state.renamed or {}).get(code)
        if renamed is not None:
            if any(i.definition.key == definition.key and i.code == code and i.subject == subject
                   for i in self.issues):
                return  # plausible inputs showed it already, under its own code
            if not renamed[0]:
                return  # an opt-in finding that was not asked for
            code, message = renamed[0], message + renamed[1]
        issue = Issue(definition, lookup(code), message, mode, subject, self.state.inputs_label,
                      self.state.inputs_origin, via)
        with self._lock:
            earlier = self._seen.get(issue.key())
            if earlier is None:
                # the same problem where one call's route was not known (a traced call, whose
                # frames are generated code): one issue, named by the route that is known
                same = [i for i in self.issues if i.key()[:3] == issue.key()[:3] and not (i.via and via)]
                if same:
                    earlier = same[0]
                    if via and not earlier.via:
                        del self._seen[earlier.key()]
                        earlier.via = via
                        self._seen[earlier.key()] = earlier
            if earlier is not None:
                modes = earlier.mode.split(", ")
                modes += [m for m in mode.split(", ") if m not in modes]
                earlier.mode = ", ".join(modes)
                return
            self._seen[issue.key()] = issue
            self.issues.append(issue)

    def note_call(self, definition: DefInfo) -> None:
        with self._lock:
            self.call_count += 1
            self.calls.setdefault(definition.key, definition)

    def drain(self) -> tuple[list[Issue], list[DefInfo]]:
        """Everything recorded since the last drain (per probed function)."""
        with self._lock:
            issues, calls = self.issues, list(self.calls.values())
            self.issues, self.calls, self._seen = [], {}, {}
        return issues, calls

    def has(self, code_prefixes: tuple[str, ...]) -> bool:
        with self._lock:
            return any(i.code.startswith(code_prefixes) for i in self.issues)

    @contextlib.contextmanager
    def renaming(self, codes: dict[str, tuple[str, str]]) -> Iterator[None]:
        """Issues of these codes recorded inside (in this thread) go under (code, message suffix)."""
        saved, self.state.renamed = self.state.renamed, codes
        try:
            yield
        finally:
            self.state.renamed = saved

    @contextlib.contextmanager
    def discarding(self) -> Iterator[None]:
        """Issues recorded inside are dropped (trial calls); calls still count."""
        with self._lock:
            saved = (list(self.issues), dict(self._seen))
        try:
            yield
        finally:
            with self._lock:
                self.issues, self._seen = saved

    def snapshot_count(self) -> int:
        with self._lock:
            return len(self.issues)


RECORDER = Recorder()


class labels:
    """Context manager setting the mode/inputs labels the checked decorator attaches to issues."""

    def __init__(self, mode: str | None = None, inputs: str | None = None, origin: str | None = None) -> None:
        self._mode, self._inputs, self._origin = mode, inputs, origin
        self._saved: tuple[str | None, str, str] = (None, "", "")

    def __enter__(self) -> None:
        state = RECORDER.state
        self._saved = (state.mode_label, state.inputs_label, state.inputs_origin)
        if self._mode is not None:
            state.mode_label = self._mode
        if self._inputs is not None:
            state.inputs_label = self._inputs
            state.inputs_origin = self._origin or ""

    def __exit__(self, *exc: object) -> None:
        RECORDER.state.mode_label, RECORDER.state.inputs_label, RECORDER.state.inputs_origin = self._saved


@contextlib.contextmanager
def naming(pairs: tuple[tuple[Any, str], ...]) -> Iterator[None]:
    """While a probe runs: its arguments by name, for wrappers that only see ``*args``."""
    state = RECORDER.state
    saved, state.arg_names = state.arg_names, pairs
    try:
        yield
    finally:
        state.arg_names = saved


def iter_lines(text: str) -> Iterator[str]:
    for line in text.splitlines():
        if line.strip():
            yield line.strip()

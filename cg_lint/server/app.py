"""The language server: diagnostics as you type, fixes as code actions, rule pages on hover.

One warm process per editor session, so libcst is imported once and the engine's caches
(``engine.Caches``: the parse per top-level statement, the reduction's facts, the walks) keep every
unchanged top-level statement between edits. Documents are linted on one worker thread (those caches
are shared), off the event loop that reads the client's messages. Changes are debounced by
coalescing: the first change after a pause is linted at once, and the changes that arrive while a
lint runs become one lint of the newest text. A result is published only if the document did not
change meanwhile (its positions would be stale).

Whatever goes wrong while linting one document is logged to the client (``window/logMessage``)
and that document gets no diagnostics; the server goes on serving the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import sys
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from cg_lint import __version__
from cg_lint.config import Settings
from cg_lint.findings import Finding
from cg_lint.server import convert
from cg_lint.server.framing import MAX_MESSAGE_BYTES, SKIPPED_METHOD
from cg_lint.server.incremental_ast import IncrementalAst
from cg_lint.server.workspace_config import WorkspaceConfig

if TYPE_CHECKING:
    from cg_lint.engine import Caches
    from cg_lint.project import TraceContexts

PYTHON_SUFFIXES = (".py", ".pyi")
# a request answered with what the session keeps, counted (bench/server_memory.py, the tests)
STATS_METHOD = "cg-lint/stats"
# the engine recurses once per nesting level (recursion limit 10,000): give its thread the room
# the main thread has
WORKER_STACK = 64 * 1024 * 1024


@dataclass
class Linted:
    """The last lint of a document: what code actions and hover answer from."""

    version: int | None
    text: str
    lines: list[str]
    findings: list[Finding]
    diagnostics: list[types.Diagnostic]
    settings: Settings | None
    path: str


@dataclass
class _Schedule:
    running: bool = False
    dirty: bool = False
    task: asyncio.Task | None = None


class _Protocol(LanguageServerProtocol):
    """pygls's protocol, without its one leak per notification.

    pygls files the future of every handler it runs as a generator or a coroutine in
    ``_request_futures`` under a fresh id; only a request's answer takes it out again. Its own
    handlers of ``didOpen``/``didChange``/``didClose`` are generators, so every edit left a future
    and its id behind for the whole session. Here the futures that answer no request are swept out
    once done (a cancel names requests only, so nothing looks them up). A sweep, not a done
    callback: pygls cancels futures while iterating that dict at shutdown, and a concurrent
    future runs its callbacks inside ``cancel()``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._transient: set[Any] = set()  # ids of futures that answer no request, not yet done

    def _execute_handler(self, msg_id: Any, handler: Any, callback: Any, args: Any = None,
                         kwargs: Any = None) -> None:
        super()._execute_handler(msg_id, handler, callback, args, kwargs)
        if not (isinstance(callback, partial) and callback.func == self._send_handler_result):
            self._transient.add(msg_id)  # a request's answer takes its own future out
        futures = self._request_futures
        done = [i for i in self._transient if i not in futures or futures[i].done()]
        for i in done:
            futures.pop(i, None)
            self._transient.discard(i)


class CgLintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "cg-lint", __version__, protocol_cls=_Protocol,
            text_document_sync_kind=types.TextDocumentSyncKind.Full
        )
        self.config = WorkspaceConfig()
        self.linted: dict[str, Linted] = {}
        self.asts: dict[str, IncrementalAst] = {}  # per document: touched only on the worker thread
        self.caches: Caches | None = None  # the engine's, for the session (libcst imported then)
        self.trace: TraceContexts | None = None  # the projects of the open files (cg_lint/project)
        # paths whose last lint left leads (cg_lint/answering.py): another buffer's edit may
        # change their answers, so they are linted again after one
        self.lead_uris: set[str] = set()
        self.schedules: dict[str, _Schedule] = {}
        # each open document's opening (a number never reused): a lint of an earlier opening, at
        # the same version number (they restart at each open), is never published for a later one
        self.openings: dict[str, int] = {}
        self.opened = itertools.count()
        self.debounce = 0.0  # seconds to wait after a change before linting (initializationOptions)
        self.rule_url: str | None = None
        self.reported_config_errors: set[str] = set()
        threading.stack_size(WORKER_STACK)
        self.linter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cg-lint")
        self.loop: asyncio.AbstractEventLoop | None = None

    # --- logging --------------------------------------------------------------------------------

    def _notify(self, send, params) -> None:
        """Send a notification from the loop's thread (the worker thread must not write itself)."""

        def go() -> None:
            with contextlib.suppress(Exception):  # the client is gone: nothing to tell
                send(params)

        loop = self.loop
        if loop is not None and threading.current_thread() is not threading.main_thread():
            loop.call_soon_threadsafe(go)
        else:
            go()

    def log(self, message: str, kind: types.MessageType = types.MessageType.Log) -> None:
        self._notify(self.window_log_message, types.LogMessageParams(type=kind, message=message))

    def show(self, message: str, kind: types.MessageType = types.MessageType.Error) -> None:
        self._notify(self.window_show_message, types.ShowMessageParams(type=kind, message=message))

    # --- linting ---------------------------------------------------------------------------------

    def open_document(self, uri: str) -> TextDocument | None:
        """The open document (the workspace keys them by the unquoted URI), None once closed."""
        return self.workspace.text_documents.get(unquote(uri))

    @staticmethod
    def is_python(doc: TextDocument) -> bool:
        return doc.language_id == "python" or doc.uri.endswith(PYTHON_SUFFIXES)

    def document_path(self, uri: str) -> tuple[str, str]:
        """(the path findings are reported for, the folder settings are looked up from)."""
        path = to_fs_path(uri)
        if path is not None and uri.startswith("file:"):
            return path, os.path.dirname(path)
        root = self.workspace.root_path or os.getcwd()
        name = uri.rsplit("/", 1)[-1] or "untitled.py"
        return os.path.join(root, name), root

    def in_context(self, findings: list[Finding], settings: Settings, path: str, text: str) -> list[Finding]:
        """Graph-mode findings only where the project can trace the definition, as the CLI
        decides (cg_lint/project), with the open buffer in place of the file on disk."""
        if not findings:
            return findings
        from cg_lint.answering import answer_leads
        from cg_lint.project import TraceContexts, in_context

        if self.trace is None:
            self.trace = TraceContexts()
        self.trace.overlay(path, text)
        self.lead_uris.discard(path)
        if any(f.lead is not None for f in findings):
            self.lead_uris.add(path)
            # a helper module open in the editor is read from its buffer, saved or not
            for doc in list(self.workspace.text_documents.values()):
                if self.is_python(doc) and doc.uri.startswith("file:"):
                    self.trace.overlay(self.document_path(doc.uri)[0], doc.source)
        return in_context(answer_leads(findings, self.trace), settings.trace_context, self.trace)

    def lint_now(self, uri: str, version: int | None, text: str) -> Linted:
        """Lint one text (on the worker thread). Never raises: a failure is logged."""
        path = uri
        try:
            path, folder = self.document_path(uri)
            loaded = self.config.for_folder(folder)
            if loaded.error is not None:
                if loaded.error not in self.reported_config_errors:
                    self.reported_config_errors.add(loaded.error)
                    self.log(f"cg-lint: error: {loaded.error}", types.MessageType.Error)
                    self.show(f"cg-lint: {loaded.error}")
                return Linted(version, text, [], [], [], None, path)
            settings = loaded.settings
            assert settings is not None
            last = self.linted.get(uri)
            if last is not None and last.text == text and last.settings is settings and path not in self.lead_uris:
                # the same text under the same settings (a save without edits): the same result
                return Linted(
                    version, text, last.lines, last.findings, last.diagnostics, settings, path
                )
            if settings.is_excluded(path):
                return Linted(version, text, [], [], [], settings, path)
            # here, not at the top: libcst is imported once there is something to lint
            from cg_lint.engine import Caches, lint_source, might_contain

            too_large = _too_large(text, path, settings, might_contain)
            if too_large is not None:  # minutes and gigabytes to lint: say so instead
                return Linted(version, text, [], [], [too_large], settings, path)

            if self.caches is None:
                self.caches = Caches()

            # the ast of the edited statements only (the rest: the last lint's); None: parse all
            tree = (
                self.asts.setdefault(uri, IncrementalAst()).parse(text)
                if might_contain(text, settings)
                else None
            )
            result = lint_source(text, path, settings, tree=tree, caches=self.caches)
            if result.error is not None:
                internal = result.error.message.startswith("internal error")
                self.log(
                    f"cg-lint: {result.error.one_line()}",
                    types.MessageType.Error if internal else types.MessageType.Log,
                )
            findings = self.in_context(result.findings, settings, path, text)
            lines = convert.split_lines(text)
            units = self.workspace.position_codec.client_num_units
            diagnostics = [
                convert.diagnostic(lines, f, units, self.rule_url) for f in findings
            ]
            return Linted(version, text, lines, findings, diagnostics, settings, path)
        except Exception as e:
            print(traceback.format_exc(), file=sys.stderr, flush=True)
            self.log(
                f"cg-lint: internal error while linting {uri}: {type(e).__name__}: {e} "
                "(please report this)",
                types.MessageType.Error,
            )
            return Linted(version, text, convert.split_lines(text), [], [], None, path)

    def publish(self, uri: str, linted: Linted) -> None:
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=uri, version=linted.version, diagnostics=linted.diagnostics
            )
        )

    def schedule(self, uri: str, delay: float = 0.0) -> None:
        doc = self.open_document(uri)
        if doc is None or not self.is_python(doc):
            return
        state = self.schedules.setdefault(uri, _Schedule())
        if state.running:
            state.dirty = True
            return
        state.running = True
        self.loop = asyncio.get_running_loop()
        state.task = self.loop.create_task(self._lint_loop(uri, state, delay))

    async def _lint_loop(self, uri: str, state: _Schedule, delay: float) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                if delay:
                    await asyncio.sleep(delay)
                state.dirty = False  # the text read below holds every change made until now
                doc = self.open_document(uri)
                if doc is None:
                    return  # closed meanwhile
                version, text, opening = doc.version, doc.source, self.openings.get(uri)
                linted = await loop.run_in_executor(self.linter, self.lint_now, uri, version, text)
                current = self.open_document(uri)
                if current is None or self.openings.get(uri) != opening:
                    return  # closed, or closed and opened again: that opening lints its own text
                if not state.dirty and current.version == version:
                    self.linted[uri] = linted
                    self.publish(uri, linted)
                    return
        except Exception as e:  # never let a task die silently
            self.log(
                f"cg-lint: internal error while scheduling {uri}: {type(e).__name__}: {e}",
                types.MessageType.Error,
            )
        finally:
            state.running = False

    async def current(self, uri: str) -> Linted | None:
        """The lint of the document's current text (linting it now if the last one is stale)."""
        doc = self.open_document(uri)
        if doc is None or not self.is_python(doc):
            return None
        linted = self.linted.get(uri)
        if linted is not None and linted.version == doc.version and linted.text == doc.source:
            return linted
        loop = self.loop = asyncio.get_running_loop()
        linted = await loop.run_in_executor(
            self.linter, self.lint_now, uri, doc.version, doc.source
        )
        if self.open_document(uri) is doc:  # not closed (nor reopened) meanwhile: keep it
            self.linted[uri] = linted
        return linted

    def relint_leads(self, changed: str) -> None:
        """Lint again the open documents whose leads another buffer's edit may answer otherwise."""
        if not self.lead_uris:
            return
        for doc in list(self.workspace.text_documents.values()):
            if doc.uri != changed and doc.uri.startswith("file:") and self.document_path(doc.uri)[0] in self.lead_uris:
                self.schedule(doc.uri, self.debounce)

    def relint_all(self) -> None:
        for doc in list(self.workspace.text_documents.values()):
            self.schedule(doc.uri)

    def closed(self, uri: str) -> None:
        """Forget what the worker keeps for a closed document: its ``ast``, and its buffer as the
        text of its module (the file on disk is that again)."""
        self.asts.pop(uri, None)
        if self.trace is not None:
            with contextlib.suppress(Exception):  # a URI the file system rejects was never overlaid
                self.trace.forget(self.document_path(uri)[0])

    def stats(self) -> dict[str, int | None]:
        """What the session keeps (on the worker thread, after the lints before it): the entries of
        each store, and the bytes Python has allocated when ``tracemalloc`` traces them (after a
        full collection, so only what is reachable counts)."""
        import gc
        import tracemalloc

        gc.collect()
        caches, trace = self.caches, self.trace
        return {
            "documents": len(self.workspace.text_documents),
            "linted": len(self.linted),
            "asts": len(self.asts),
            "schedules": len(self.schedules),
            "futures": len(self.protocol._request_futures),
            "chunks": len(caches.chunks) if caches else 0,
            "chunk_chars": caches.chunks.chars if caches else 0,
            "nodes": len(caches.nodes) if caches else 0,
            "reduction": len(caches.reduction) if caches else 0,
            "overlays": len(trace.overlays) if trace else 0,
            "traced": tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else None,
        }

    # --- code actions ----------------------------------------------------------------------------

    def workspace_edit(self, uri: str, version: int | None, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
        """Edits of the text at ``version``: a client that knows versioned edits refuses them once
        the document has changed, instead of applying them at positions that have moved."""
        caps = self.client_capabilities.workspace
        versioned = caps is not None and caps.workspace_edit is not None and caps.workspace_edit.document_changes
        if version is None or not versioned:
            return types.WorkspaceEdit(changes={uri: list(edits)})
        document = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=document,
                                                                             edits=list(edits))])

    def code_actions(
        self, uri: str, linted: Linted, params: types.CodeActionParams
    ) -> list[types.CodeAction]:
        only = params.context.only
        units = self.workspace.position_codec.client_num_units

        def wanted(kind: str) -> bool:
            return not only or any(kind == k or kind.startswith(f"{k}.") for k in only)

        actions: list[types.CodeAction] = []
        if wanted(types.CodeActionKind.QuickFix):
            # diagnostics past the findings are the server's own (a file too large to check)
            for finding, diag in zip(linted.findings, linted.diagnostics[: len(linted.findings)], strict=True):
                if not convert.overlaps(diag.range, params.range):
                    continue
                if finding.fix is not None and finding.fix.safe:
                    edits = convert.fix_edits(linted.text, linted.lines, finding.fix, units)
                    actions.append(
                        types.CodeAction(
                            title=f"{finding.fix.title} ({finding.code})",
                            kind=types.CodeActionKind.QuickFix,
                            diagnostics=[diag],
                            is_preferred=True,
                            edit=self.workspace_edit(uri, linted.version, edits),
                        )
                    )
                noqa = convert.noqa_edit(linted.text, linted.lines, finding, units)
                if noqa is not None:
                    actions.append(
                        types.CodeAction(
                            title=f"Silence {finding.code} on this line (# noqa: {finding.code})",
                            kind=types.CodeActionKind.QuickFix,
                            diagnostics=[diag],
                            edit=self.workspace_edit(uri, linted.version, [noqa]),
                        )
                    )
        if (
            wanted(convert.FIX_ALL_KIND)
            and linted.settings is not None
            and any(f.fix is not None and f.fix.safe for f in linted.findings)
        ):
            from cg_lint.fixes import fix_source

            outcome = fix_source(linted.text, linted.path, linted.settings)
            if outcome.changed and outcome.error is None:
                actions.append(
                    types.CodeAction(
                        title="Fix all cg-lint problems",
                        kind=convert.FIX_ALL_KIND,
                        edit=self.workspace_edit(
                            uri, linted.version, [convert.minimal_edit(linted.text, outcome.text, units)]
                        ),
                    )
                )
        return actions


def _too_large(text: str, path: str, settings: Settings, might_contain) -> types.Diagnostic | None:
    """The diagnostic for a candidate over ``max-file-size`` (as the CLI's one line), else None."""
    if len(text) <= settings.max_file_size or not might_contain(text, settings):
        return None  # characters <= bytes: a shorter text cannot be over
    size = len(text.encode("utf-8", "surrogatepass"))
    if size <= settings.max_file_size:
        return None
    from cg_lint.sources import too_large

    message = too_large(path, size, settings.max_file_size).message
    return types.Diagnostic(
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
        message=f"cg-lint: {message}; not checked (max-file-size in [tool.cg_lint])",
        severity=types.DiagnosticSeverity.Warning, source="cg-lint")


def create_server() -> CgLintServer:  # noqa: C901 (a table of cases)
    server = CgLintServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: CgLintServer, params: types.InitializeParams) -> None:
        options = (
            params.initialization_options if isinstance(params.initialization_options, dict) else {}
        )
        try:
            ls.debounce = max(0.0, float(options.get("debounceMs", 0)) / 1000)
        except (TypeError, ValueError):
            ls.debounce = 0.0
        url = options.get("ruleUrl")
        ls.rule_url = url if isinstance(url, str) and "{code}" in url else None

    @server.feature(types.INITIALIZED)
    def initialized(ls: CgLintServer, params: types.InitializedParams) -> None:
        caps = ls.client_capabilities.workspace
        watched = caps.did_change_watched_files if caps else None
        if watched is not None and watched.dynamic_registration:
            ls.client_register_capability(
                types.RegistrationParams(
                    registrations=[
                        types.Registration(
                            id="cg-lint-pyproject",
                            method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                            register_options=types.DidChangeWatchedFilesRegistrationOptions(
                                watchers=[types.FileSystemWatcher(glob_pattern="**/pyproject.toml")]
                            ),
                        )
                    ]
                )
            )

    # Notifications are plain functions (run on the event loop): an async handler's future is one
    # more object per edit for _Protocol to sweep out of pygls's table
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: CgLintServer, params: types.DidOpenTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.openings[uri] = next(ls.opened)
        ls.linted.pop(uri, None)  # a result of an earlier opening is not this text's
        ls.schedule(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: CgLintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, ls.debounce)
        ls.relint_leads(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: CgLintServer, params: types.DidSaveTextDocumentParams) -> None:
        if ls.trace is not None:  # other modules may have changed too: read the project again
            ls.linter.submit(ls.trace.refresh)
        ls.schedule(params.text_document.uri)

    @server.feature(SKIPPED_METHOD)
    def skipped(ls: CgLintServer, params) -> None:
        size = getattr(params, "bytes", "?")
        ls.log(f"cg-lint: a message of {size} bytes from the client was over the server's limit of "
               f"{MAX_MESSAGE_BYTES} bytes and was skipped", types.MessageType.Error)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: CgLintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.linted.pop(uri, None)
        ls.schedules.pop(uri, None)
        ls.openings.pop(uri, None)
        ls.linter.submit(ls.closed, uri)  # on the worker thread, after a lint under way
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched_files(ls: CgLintServer, params: types.DidChangeWatchedFilesParams) -> None:
        if any(c.uri.endswith("pyproject.toml") for c in params.changes):
            ls.config.forget()
            ls.reported_config_errors.clear()
            ls.relint_all()

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, convert.FIX_ALL_KIND]
        ),
    )
    async def code_action(
        ls: CgLintServer, params: types.CodeActionParams
    ) -> list[types.CodeAction] | None:
        uri = params.text_document.uri
        linted = await ls.current(uri)
        if linted is None:
            return None
        try:  # on the worker thread: fix-all lints again, and the engine's caches are not shared
            return await asyncio.get_running_loop().run_in_executor(
                ls.linter, ls.code_actions, uri, linted, params
            )
        except Exception as e:
            ls.log(
                f"cg-lint: internal error in code actions for {uri}: {type(e).__name__}: {e}",
                types.MessageType.Error,
            )
            return None

    @server.feature(STATS_METHOD)
    async def stats(ls: CgLintServer, params: Any) -> dict[str, int | None]:
        return await asyncio.get_running_loop().run_in_executor(ls.linter, ls.stats)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: CgLintServer, params: types.HoverParams) -> types.Hover | None:
        linted = await ls.current(params.text_document.uri)
        if linted is None:
            return None
        hit = [d for d in linted.diagnostics if convert.contains(d.range, params.position)]
        if not hit:
            return None
        text = convert.hover_markdown((str(d.code) for d in hit), ls.rule_url)
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
            range=hit[0].range,
        )

    return server

"""``cg-lint server`` as an editor runs it: a real subprocess over stdio, driven by pygls' client.

Every test starts the server with ``python -m cg_lint server`` and talks LSP to it; nothing inside
the server is patched. Faults are real: a document whose URI the file system rejects, a
pyproject.toml that the TOML reader cannot take.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lint_helpers import ROOT, run_cli

pytest.importorskip("pygls.lsp.client")
from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

ARITY = (ROOT / "examples" / "arity.py").read_text(encoding="utf-8")
WAIT = 60  # seconds any one answer may take (a cold start imports libcst on a loaded machine)
_NEWLINE = re.compile(r"\r\n|\r|\n")


# --- a tiny editor --------------------------------------------------------------------------------


def offset_of(text: str, pos: types.Position) -> int:
    """An LSP position (UTF-16 columns) as an offset into ``text``: what an editor computes."""
    starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]
    start = starts[pos.line] if pos.line < len(starts) else len(text)
    units, i = 0, start
    while units < pos.character and i < len(text) and text[i] not in "\r\n":
        units += 2 if ord(text[i]) > 0xFFFF else 1
        i += 1
    return i


def apply_edits(text: str, edits: list[types.TextEdit]) -> str:
    spans = sorted(
        ((offset_of(text, e.range.start), offset_of(text, e.range.end), e.new_text) for e in edits),
        reverse=True,
    )
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


class Editor:
    """pygls' LanguageClient around a real ``cg-lint server`` process, recording what it sends."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.client = LanguageClient("test-editor", "1")
        self.published: asyncio.Queue[types.PublishDiagnosticsParams] = asyncio.Queue()
        self.logs: list[types.LogMessageParams] = []
        self.shown: list[types.ShowMessageParams] = []
        self.registrations: list[types.Registration] = []
        self.versions: dict[str, int] = {}
        self.texts: dict[str, str] = {}

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_publish(params: types.PublishDiagnosticsParams) -> None:
            self.published.put_nowait(params)

        @self.client.feature(types.WINDOW_LOG_MESSAGE)
        def on_log(params: types.LogMessageParams) -> None:
            self.logs.append(params)

        @self.client.feature(types.WINDOW_SHOW_MESSAGE)
        def on_show(params: types.ShowMessageParams) -> None:
            self.shown.append(params)

        @self.client.feature(types.CLIENT_REGISTER_CAPABILITY)
        def on_register(params: types.RegistrationParams) -> None:
            self.registrations.extend(params.registrations)

    async def start(
        self, options: dict | None = None, args: tuple[str, ...] = ()
    ) -> types.InitializeResult:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        await self.client.start_io(
            sys.executable, "-m", "cg_lint", "server", *args, cwd=str(self.cwd), env=env
        )
        caps = types.ClientCapabilities(
            workspace=types.WorkspaceClientCapabilities(
                did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(
                    dynamic_registration=True
                )
            )
        )
        result = await asyncio.wait_for(
            self.client.initialize_async(
                types.InitializeParams(
                    capabilities=caps,
                    root_uri=self.cwd.as_uri(),
                    process_id=os.getpid(),
                    initialization_options=options,
                )
            ),
            WAIT,
        )
        self.client.initialized(types.InitializedParams())
        return result

    def open(self, uri: str, text: str) -> None:
        self.versions[uri], self.texts[uri] = 1, text
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="python", version=1, text=text
                )
            )
        )

    def change(self, uri: str, text: str) -> None:
        self.versions[uri] += 1
        self.texts[uri] = text
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=uri, version=self.versions[uri]
                ),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    async def diagnostics(self, uri: str) -> list[types.Diagnostic]:
        """The next diagnostics published for ``uri`` at its current version."""
        while True:
            params = await asyncio.wait_for(self.published.get(), WAIT)
            if params.uri == uri and params.version in (None, self.versions.get(uri)):
                return list(params.diagnostics)

    async def actions(
        self, uri: str, rng: types.Range, only: list[str] | None = None
    ) -> list[types.CodeAction]:
        result = await asyncio.wait_for(
            self.client.text_document_code_action_async(
                types.CodeActionParams(
                    text_document=types.TextDocumentIdentifier(uri=uri),
                    range=rng,
                    context=types.CodeActionContext(diagnostics=[], only=only),
                )
            ),
            WAIT,
        )
        return [a for a in result or [] if isinstance(a, types.CodeAction)]

    async def hover(self, uri: str, line: int, character: int) -> types.Hover | None:
        return await asyncio.wait_for(
            self.client.text_document_hover_async(
                types.HoverParams(
                    text_document=types.TextDocumentIdentifier(uri=uri),
                    position=types.Position(line=line, character=character),
                )
            ),
            WAIT,
        )

    async def stop(self) -> int | None:
        """shutdown + exit; the process's exit code (None if it had to be killed)."""
        server = self.client._server
        try:
            await asyncio.wait_for(self.client.shutdown_async(None), WAIT)
            self.client.exit(None)
            await asyncio.wait_for(server.wait(), 10)
            return server.returncode
        except (asyncio.TimeoutError, RuntimeError):
            return None
        finally:
            await self.kill()

    async def kill(self) -> None:
        server = self.client._server
        if server is not None and server.returncode is None:
            server.kill()
            await server.wait()
        await self.client.stop()


def run(coro_fn, tmp_path: Path, options: dict | None = None):
    async def main():
        editor = Editor(tmp_path)
        await editor.start(options)
        try:
            return await coro_fn(editor)
        finally:
            await editor.kill()

    return asyncio.run(main())


def cli_findings(path: Path, cwd: Path) -> list[tuple[int, int, str, str]]:
    """(0-based line, 0-based column, code, message) of what ``cg-lint --format json`` reports."""
    proc = run_cli(str(path), "--format", "json", "--no-cache", cwd=cwd)
    return [
        (f["line"] - 1, f["column"] - 1, f["code"], f["message"]) for f in json.loads(proc.stdout)
    ]


def as_tuples(diagnostics: list[types.Diagnostic]) -> list[tuple[int, int, str, str]]:
    return sorted(
        (d.range.start.line, d.range.start.character, str(d.code), d.message) for d in diagnostics
    )


# --- the session the issue describes --------------------------------------------------------------


def test_open_change_fix_hover_and_exit(tmp_path):
    path = tmp_path / "arity.py"
    path.write_text(ARITY, encoding="utf-8")
    expected = cli_findings(path, tmp_path)
    assert [f[:3] for f in expected] == [(15, 8, "CG003"), (30, 4, "CG001"), (38, 8, "CG002")]
    uri = path.as_uri()

    async def session(editor: Editor):
        editor.open(uri, ARITY)
        diags = await editor.diagnostics(uri)
        # the CLI's positions (0-based), codes and messages, each linking to its rule page
        assert as_tuples(diags) == expected
        assert all(
            d.source == "cg-lint"
            and d.code_description is not None
            and d.code_description.href.endswith(f"/{d.code}.md")
            for d in diags
        )

        # three lines above everything: the same findings, three lines further down
        moved = "import os\nimport sys\n\n" + ARITY
        editor.change(uri, moved)
        diags = await editor.diagnostics(uri)
        assert as_tuples(diags) == [(line + 3, col, code, msg) for line, col, code, msg in expected]

        # the fix of CG001 as a quick fix: applied, the file compiles and the finding is gone
        cg001 = next(d for d in diags if d.code == "CG001")
        actions = await editor.actions(uri, cg001.range)
        fix = next(a for a in actions if a.title.startswith("Wrap the outputs in a tuple"))
        assert fix.kind == types.CodeActionKind.QuickFix and fix.is_preferred
        assert fix.diagnostics and fix.diagnostics[0].code == "CG001"
        fixed = apply_edits(moved, fix.edit.changes[uri])
        compile(fixed, "arity.py", "exec")
        assert "    return (mean, spread), grad\n" in fixed
        editor.change(uri, fixed)
        diags = await editor.diagnostics(uri)
        assert sorted(str(d.code) for d in diags) == ["CG002", "CG003"]

        # silencing CG003 with a noqa comment: it lands on the reported line and silences it
        cg003 = next(d for d in diags if d.code == "CG003")
        actions = await editor.actions(uri, cg003.range)
        assert [a.title for a in actions] == ["Silence CG003 on this line (# noqa: CG003)"]
        silenced = apply_edits(fixed, actions[0].edit.changes[uri])
        compile(silenced, "arity.py", "exec")
        assert silenced.splitlines()[cg003.range.start.line].endswith(
            "return tf.clip_by_value(dy * w, -1.0, 1.0)  # noqa: CG003"
        )
        editor.change(uri, silenced)
        assert [str(d.code) for d in await editor.diagnostics(uri)] == ["CG002"]

        # hover on a diagnostic: the rule page, as `cg-lint rule CG002` prints it
        hover = await editor.hover(uri, 38 + 3, 10)
        page = run_cli("rule", "CG002").stdout.decode()
        assert hover is not None and hover.contents.kind == types.MarkupKind.Markdown
        assert hover.contents.value.startswith(page)
        assert "Why is this bad?" in hover.contents.value
        assert hover.range.start == types.Position(line=41, character=8)
        assert await editor.hover(uri, 0, 0) is None  # no diagnostic there

        code = await editor.stop()
        assert code == 0

    run(session, tmp_path)


def test_fix_all_source_action(tmp_path):
    source = ARITY + textwrap.dedent("""

        @tf.custom_gradient
        def pair_sum(a, b):
            def grad(dy):
                return dy, dy
            return a + b, a - b, grad
    """)
    uri = (tmp_path / "two.py").as_uri()

    async def session(editor: Editor):
        editor.open(uri, source)
        assert sorted(str(d.code) for d in await editor.diagnostics(uri)).count("CG001") == 2
        whole = types.Range(
            start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)
        )
        actions = await editor.actions(uri, whole, only=[types.CodeActionKind.SourceFixAll])
        assert [(a.title, a.kind) for a in actions] == [
            ("Fix all cg-lint problems", "source.fixAll.cg-lint")
        ]
        fixed = apply_edits(source, actions[0].edit.changes[uri])
        compile(fixed, "two.py", "exec")
        assert (
            fixed.count("return (a + b, a - b), grad") == 1
            and "return (mean, spread), grad" in fixed
        )
        # only the changed lines are replaced (the editor keeps cursor and undo history elsewhere)
        assert all(e.range.end.line - e.range.start.line < 40 for e in actions[0].edit.changes[uri])
        # quick fixes are not offered when only source actions are asked for, and vice versa
        cg001 = types.Range(
            start=types.Position(line=30, character=4), end=types.Position(line=30, character=5)
        )
        assert all(
            a.kind == types.CodeActionKind.QuickFix
            for a in await editor.actions(uri, cg001, only=[types.CodeActionKind.QuickFix])
        )
        editor.change(uri, fixed)
        assert "CG001" not in [str(d.code) for d in await editor.diagnostics(uri)]
        # nothing left to fix: no fix-all action
        assert await editor.actions(uri, whole, only=[types.CodeActionKind.SourceFixAll]) == []

    run(session, tmp_path)


def test_columns_are_utf16_code_units(tmp_path):
    # the return statement starts after an emoji (two UTF-16 units, one character)
    source = textwrap.dedent("""\
        import tensorflow as tf


        @tf.custom_gradient
        def f(x):
            def grad(dy):
                return dy
            tag = "\U0001f600"; return x, x, grad
    """)
    uri = (tmp_path / "emoji.py").as_uri()
    (tmp_path / "emoji.py").write_text(source, encoding="utf-8")
    [(line, column, code, _)] = cli_findings(tmp_path / "emoji.py", tmp_path)
    assert (line, code) == (7, "CG001")

    async def session(editor: Editor):
        editor.open(uri, source)
        [diag] = await editor.diagnostics(uri)
        assert (diag.range.start.line, diag.range.start.character) == (7, column + 1)
        actions = await editor.actions(uri, diag.range)
        assert [a.kind for a in actions] == ["quickfix", "quickfix", "source.fixAll.cg-lint"]
        fix = actions[0]
        fixed = apply_edits(source, fix.edit.changes[uri])
        assert fixed.splitlines()[7] == '    tag = "\U0001f600"; return (x, x), grad'

    run(session, tmp_path)


# --- configuration -----------------------------------------------------------------------------


def test_config_from_pyproject_and_reloaded_when_it_changes(tmp_path):
    project = tmp_path / "proj"
    (project / "pkg").mkdir(parents=True)
    config = project / "pyproject.toml"
    config.write_text('[tool.cg_lint]\nignore = ["CG003"]\n', encoding="utf-8")
    uri = (project / "pkg" / "arity.py").as_uri()

    async def session(editor: Editor):
        editor.open(uri, ARITY)
        assert sorted(str(d.code) for d in await editor.diagnostics(uri)) == ["CG001", "CG002"]
        assert [
            (r.method, r.register_options["watchers"][0]["globPattern"])
            for r in editor.registrations
        ] == [("workspace/didChangeWatchedFiles", "**/pyproject.toml")]

        # the client watches pyproject.toml and says it changed: every open document is re-linted
        config.write_text('[tool.cg_lint]\nignore = ["CG002"]\n', encoding="utf-8")
        editor.client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[types.FileEvent(uri=config.as_uri(), type=types.FileChangeType.Changed)]
            )
        )
        assert sorted(str(d.code) for d in await editor.diagnostics(uri)) == ["CG001", "CG003"]

        # a client that does not: the next lint (here on save, the text unchanged) sees the new
        # modification time
        config.write_text('[tool.cg_lint]\nselect = ["CG001"]\n', encoding="utf-8")
        os.utime(config, ns=(config.stat().st_mtime_ns + 10**9,) * 2)
        editor.client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        assert [str(d.code) for d in await editor.diagnostics(uri)] == ["CG001"]

        # excluded files get no diagnostics, as with `cg-lint --force-exclude`
        config.write_text('[tool.cg_lint]\nextend-exclude = ["pkg/"]\n', encoding="utf-8")
        os.utime(config, ns=(config.stat().st_mtime_ns + 2 * 10**9,) * 2)
        editor.change(uri, ARITY)
        assert await editor.diagnostics(uri) == []

    run(session, tmp_path)


# --- faults: logged, and the server goes on -------------------------------------------------------


def test_a_crash_in_one_document_is_logged_and_the_server_keeps_serving(tmp_path):
    good = tmp_path / "arity.py"
    # a path the file system refuses (an embedded NUL byte): looking up its settings raises
    broken = "file://" + str(tmp_path).replace(os.sep, "/") + "/bro%00ken/arity.py"

    async def session(editor: Editor):
        editor.open(broken, ARITY)
        assert await editor.diagnostics(broken) == []
        errors = [m.message for m in editor.logs if m.type == types.MessageType.Error]
        assert len(errors) == 1 and errors[0].startswith(
            f"cg-lint: internal error while linting {broken}: ValueError"
        )
        editor.open(good.as_uri(), ARITY)
        assert len(await editor.diagnostics(good.as_uri())) == 3
        assert await editor.hover(good.as_uri(), 15, 8) is not None
        assert await editor.stop() == 0

    run(session, tmp_path)


def test_a_config_the_toml_reader_cannot_take_is_reported_and_the_server_keeps_serving(tmp_path):
    bad, good = tmp_path / "bad", tmp_path / "good"
    bad.mkdir(), good.mkdir()
    # nested deeper than tomllib's recursion can follow
    (bad / "pyproject.toml").write_text(
        "[tool.cg_lint]\nselect = " + "[" * 5000 + "]" * 5000 + "\n"
    )

    async def session(editor: Editor):
        editor.open((bad / "a.py").as_uri(), ARITY)
        assert await editor.diagnostics((bad / "a.py").as_uri()) == []
        errors = [m.message for m in editor.logs if m.type == types.MessageType.Error]
        assert len(errors) == 1 and "pyproject.toml" in errors[0] and "\n" not in errors[0]
        assert [m.message for m in editor.shown] == [
            errors[0].replace("cg-lint: error: ", "cg-lint: ")
        ]
        editor.open((good / "a.py").as_uri(), ARITY)
        assert len(await editor.diagnostics((good / "a.py").as_uri())) == 3
        assert await editor.stop() == 0

    run(session, tmp_path)


def test_unparsable_text_clears_the_diagnostics(tmp_path):
    uri = (tmp_path / "a.py").as_uri()

    async def session(editor: Editor):
        editor.open(uri, ARITY)
        assert len(await editor.diagnostics(uri)) == 3
        editor.change(uri, ARITY + "\ndef broken(:\n")
        assert await editor.diagnostics(uri) == []
        assert not [m for m in editor.logs if m.type == types.MessageType.Error]
        editor.change(uri, ARITY)
        assert len(await editor.diagnostics(uri)) == 3

    run(session, tmp_path)


# --- the process ---------------------------------------------------------------------------------


def test_closing_stdin_ends_the_server(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-m", "cg_lint", "server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=env,
    )
    try:
        proc.stdin.close()
        assert proc.wait(timeout=WAIT) == 1  # the client went away without `shutdown`
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def server_without_pygls(cwd: Path) -> subprocess.CompletedProcess[str]:
    """``cg-lint server`` in a real interpreter where pygls cannot be imported
    (``sys.modules[name] = None`` makes ``import`` fail)."""
    code = (
        "import sys; sys.modules['pygls'] = None; from cg_lint.cli import main; "
        "sys.exit(main(['server']))"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=WAIT,
    )


def test_without_pygls_one_line_and_exit_2(tmp_path):
    proc = server_without_pygls(tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (
        "cg-lint: error: 'cg-lint server' needs pygls>=2 and lsprotocol (the 'server' extra): "
        "pip install 'pygls>=2' lsprotocol\n"
    )


def test_windows_newlines_are_kept_by_the_fixes(tmp_path):
    source = ARITY.replace("\n", "\r\n")
    uri = (tmp_path / "crlf.py").as_uri()

    async def session(editor: Editor):
        editor.open(uri, source)
        diags = await editor.diagnostics(uri)
        assert sorted((d.range.start.line, d.range.start.character) for d in diags) == [
            (15, 8),
            (30, 4),
            (38, 8),
        ]
        cg001 = next(d for d in diags if d.code == "CG001")
        actions = await editor.actions(uri, cg001.range)
        for action in actions:
            changed = apply_edits(source, action.edit.changes[uri])
            compile(changed, "crlf.py", "exec")
            assert "\n" not in changed.replace("\r\n", "")  # no bare newline slipped in
        assert "    return (mean, spread), grad\r\n" in apply_edits(
            source, actions[0].edit.changes[uri]
        )

    run(session, tmp_path)


def test_unknown_arguments_one_line_and_exit_2(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "cg_lint", "server", "--tcp"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=WAIT,
    )
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == "cg-lint server: error: unrecognized arguments: --tcp\n"


def test_stdio_flag_changes_nothing(tmp_path):
    uri = (tmp_path / "arity.py").as_uri()

    async def main():
        editor = Editor(tmp_path)
        await editor.start(args=("--stdio",))
        try:
            editor.open(uri, ARITY)
            assert len(await editor.diagnostics(uri)) == 3
            assert await editor.stop() == 0
        finally:
            await editor.kill()

    asyncio.run(main())

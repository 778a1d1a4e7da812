"""``cg-lint server`` survives its client: bad framing, huge messages and files, reopened documents,
edits that arrive after a code action was computed.

A real server process each time. Bad frames are written as raw bytes on its stdin (a JSON-RPC
client would refuse to send them); the other tests drive it with pygls' client as an editor does.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lint_helpers import ROOT

pytest.importorskip("pygls.lsp.client")
from lsprotocol import types  # noqa: E402

from cg_lint.server.framing import MAX_MESSAGE_BYTES  # noqa: E402
from test_faults_lint import source  # noqa: E402
from test_server import ARITY, WAIT, Editor  # noqa: E402

BAD = "import tensorflow as tf\n\n@tf.custom_gradient\ndef f(x, w):\n    def grad(dy):\n        return dy\n    return x * w, grad\n"


# --- a raw JSON-RPC peer ------------------------------------------------------------------------


class RawPeer:
    """The server's stdio as bytes: frames written as given, messages read on a thread."""

    def __init__(self, cwd: Path) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT), CG_LINT_CACHE_DIR=str(cwd / "cache"))
        self.proc = subprocess.Popen([sys.executable, "-m", "cg_lint", "server"], cwd=cwd, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.messages: list[dict] = []
        self.lock = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                if line in (b"\r\n", b"\n"):
                    break
            body = json.loads(out.read(length or 0))
            with self.lock:
                self.messages.append(body)
                self.lock.notify_all()

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        self.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def wait_for(self, predicate, timeout: float = WAIT) -> dict:
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                for m in self.messages:
                    if predicate(m):
                        return m
                left = deadline - time.monotonic()
                assert left > 0 and self.proc.poll() is None, (self.messages, self.stderr_tail())
                self.lock.wait(left)

    def stderr_tail(self) -> str:
        return ""

    def initialize(self, root: Path) -> None:
        self.send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"processId": None, "rootUri": root.as_uri(), "capabilities": {}}})
        self.wait_for(lambda m: m.get("id") == 1)
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def open(self, uri: str, text: str, version: int = 1) -> None:
        self.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
            "textDocument": {"uri": uri, "languageId": "python", "version": version, "text": text}}})

    def finish(self, timeout: float = WAIT) -> tuple[int, str]:
        """Close stdin; (exit status, stderr)."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout)
        assert self.proc.stderr is not None
        return self.proc.returncode, self.proc.stderr.read().decode(errors="replace")


def published(uri: str):
    return lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri


# --- framing ------------------------------------------------------------------------------------


def test_a_content_length_beyond_memory_ends_the_server_cleanly(tmp_path: Path) -> None:
    peer = RawPeer(tmp_path)
    peer.initialize(tmp_path)
    uri = (tmp_path / "a.py").as_uri()
    peer.open(uri, BAD)
    peer.wait_for(published(uri))
    peer.send_raw(b"Content-Length: 99999999999\r\n\r\n{\"jsonrpc\": \"2.0\"}")
    status, stderr = peer.finish()
    # the stream ended inside the promised body: the client is gone, without shutdown (exit 1)
    assert status == 1
    assert "MemoryError" not in stderr and "Traceback" not in stderr, stderr[-3000:]


def test_a_header_line_without_end_is_bounded(tmp_path: Path) -> None:
    peer = RawPeer(tmp_path)
    peer.initialize(tmp_path)
    peer.send_raw(b"X-Junk: " + b"x" * (8 << 20) + b"\r\n\r\n")  # 8 MB in one "header line"
    uri = (tmp_path / "a.py").as_uri()
    peer.open(uri, BAD)
    assert [d["code"] for d in peer.wait_for(published(uri))["params"]["diagnostics"]] == ["CG003"]
    status, stderr = peer.finish()
    assert status == 1 and "Traceback" not in stderr, stderr[-3000:]


@pytest.mark.slow
def test_an_oversized_message_is_skipped_and_the_server_keeps_serving(tmp_path: Path) -> None:
    peer = RawPeer(tmp_path)
    peer.initialize(tmp_path)
    body = b'{"jsonrpc": "2.0", "method": "textDocument/didOpen"}'
    body += b" " * (MAX_MESSAGE_BYTES + 1 - len(body))  # framed correctly, one byte over the limit
    peer.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    del body
    log = peer.wait_for(lambda m: m.get("method") == "window/logMessage" and "skipped" in m["params"]["message"])
    assert str(MAX_MESSAGE_BYTES + 1) in log["params"]["message"]
    uri = (tmp_path / "a.py").as_uri()
    peer.open(uri, BAD)  # the stream is still in step
    assert [d["code"] for d in peer.wait_for(published(uri))["params"]["diagnostics"]] == ["CG003"]
    status, stderr = peer.finish()
    assert status == 1 and "Traceback" not in stderr, stderr[-3000:]


def test_bodies_that_are_not_json_rpc_are_logged_and_the_server_goes_on(tmp_path: Path) -> None:
    peer = RawPeer(tmp_path)
    peer.initialize(tmp_path)
    for body in (b"{not json", b"\xff\xfe", b"[" * 100_000 + b"]" * 100_000, b"42", b'{"jsonrpc": "2.0"}'):
        peer.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    uri = (tmp_path / "a.py").as_uri()
    peer.open(uri, BAD)
    assert [d["code"] for d in peer.wait_for(published(uri))["params"]["diagnostics"]] == ["CG003"]
    status, _stderr = peer.finish()
    assert status == 1


# --- documents ----------------------------------------------------------------------------------


def test_a_file_over_max_file_size_gets_one_diagnostic_saying_so(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.cg_lint]\nmax-file-size = 20000\n")
    peer = RawPeer(tmp_path)
    peer.initialize(tmp_path)
    uri = (tmp_path / "big.py").as_uri()
    text = source(200)  # ~30 KB of custom gradients
    started = time.monotonic()
    peer.open(uri, text)
    [diagnostic] = peer.wait_for(published(uri))["params"]["diagnostics"]
    assert time.monotonic() - started < WAIT
    assert diagnostic["severity"] == 2 and "too large to check" in diagnostic["message"]
    assert "max-file-size" in diagnostic["message"]
    small = (tmp_path / "small.py").as_uri()
    peer.open(small, BAD)  # other documents are checked as before
    assert [d["code"] for d in peer.wait_for(published(small))["params"]["diagnostics"]] == ["CG003"]
    peer.finish()


def test_reopening_at_the_same_version_never_shows_the_old_text(tmp_path: Path) -> None:
    """The old text takes long to lint; the document is closed and opened again, at version 1
    again, with other text before that lint ends: its result must not be published."""
    peer = RawPeer(tmp_path)
    peer.initialize(tmp_path)
    uri = (tmp_path / "m.py").as_uri()
    warm = (tmp_path / "warm.py").as_uri()
    peer.open(warm, BAD)  # libcst imported, the worker warm
    peer.wait_for(published(warm))
    peer.open(uri, source(300))  # 300 CG001 findings, a second or more to lint
    peer.send({"jsonrpc": "2.0", "method": "textDocument/didClose", "params": {"textDocument": {"uri": uri}}})
    peer.open(uri, BAD)
    peer.wait_for(lambda m: published(uri)(m) and [d["code"] for d in m["params"]["diagnostics"]] == ["CG003"])
    time.sleep(3)  # time for the old lint to end and (before the fix) be published
    with peer.lock:
        after = [m["params"]["diagnostics"] for m in peer.messages if published(uri)(m)]
    codes = [{d["code"] for d in diagnostics} for diagnostics in after]
    assert all("CG001" not in c for c in codes), codes
    assert codes[-1] == {"CG003"}
    peer.finish()


class VersionedEditor(Editor):
    async def start(self, options: dict | None = None, args: tuple[str, ...] = ()) -> types.InitializeResult:
        env = dict(os.environ, PYTHONPATH=str(ROOT), CG_LINT_CACHE_DIR=str(self.cwd / "cache"))
        await self.client.start_io(sys.executable, "-m", "cg_lint", "server", cwd=str(self.cwd), env=env)
        caps = types.ClientCapabilities(workspace=types.WorkspaceClientCapabilities(
            workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True)))
        result = await asyncio.wait_for(self.client.initialize_async(types.InitializeParams(
            capabilities=caps, root_uri=self.cwd.as_uri(), process_id=os.getpid())), WAIT)
        self.client.initialized(types.InitializedParams())
        return result


def test_code_action_edits_name_the_version_they_were_computed_for(tmp_path: Path) -> None:
    async def session() -> None:
        editor = VersionedEditor(tmp_path)
        await editor.start()
        try:
            uri = (tmp_path / "arity.py").as_uri()
            editor.open(uri, ARITY)
            await editor.diagnostics(uri)
            editor.change(uri, ARITY + "\n")  # version 2
            await editor.diagnostics(uri)
            everything = types.Range(start=types.Position(line=0, character=0),
                                     end=types.Position(line=len(ARITY.splitlines()), character=0))
            actions = await editor.actions(uri, everything)
            assert actions
            for action in actions:
                assert action.edit is not None and action.edit.changes is None
                [change] = action.edit.document_changes or []
                assert isinstance(change, types.TextDocumentEdit)
                assert (change.text_document.uri, change.text_document.version) == (uri, 2)
        finally:
            await editor.kill()

    asyncio.run(session())

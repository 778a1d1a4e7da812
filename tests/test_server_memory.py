"""``cg-lint server`` keeps a bounded amount over a long session: what it holds after N edits is what
it holds after 2N (issue 23: "memory must stay bounded over a long session").

Every edit makes new objects of the statements it touched (parsed pieces, walks, an ``ast``) and
new protocol objects; each store must drop the old ones. The checks count entries, and the bytes
``tracemalloc`` sees reachable after a full collection, in a real server process: not the resident
size or the time, which a loaded machine moves.
"""

from __future__ import annotations

import asyncio

import pytest

from bench.gen_cg import generate
from cg_lint.engine import Caches, lint_source
from cg_lint.prefilter.parse_cache import IDLE_PARSES
from cg_lint.syntax.walk import IDLE_FILES

pytest.importorskip("pygls.lsp.client")
from lsprotocol import types  # noqa: E402

from test_server import WAIT, Editor  # noqa: E402

BASE = generate(200)
WARM = max(IDLE_PARSES, IDLE_FILES) + 8  # edits before what is kept stops changing
STRIDE = 2 * IDLE_FILES  # edits between the two counts: the same phase of the facts' generations


def edited(n: int) -> str:
    """The n-th version: a constant in a custom gradient's grad (parsed and walked again) and one
    in a line the prefilter blanks, each new text every time, as typing gives."""
    n += 100  # as many digits every time: the same length of text
    return BASE.replace("dy * 2.0", f"dy * 2.{n}", 1).replace("0.5", f"0.{n}", 1)


KEPT = ("documents", "linted", "asts", "schedules", "futures", "chunks", "chunk_chars", "nodes", "reduction",
        "overlays")


def test_what_the_engine_keeps_stops_growing():
    caches = Caches()
    counts = []
    for n in range(1, WARM + 2 * STRIDE + 1):
        lint_source(edited(n), "model.py", caches=caches)
        if n in (WARM + STRIDE, WARM + 2 * STRIDE):
            counts.append((len(caches.chunks), caches.chunks.chars, len(caches.nodes), len(caches.reduction)))
    assert counts[0] == counts[1]
    assert counts[0][0] < 2 * len(BASE.split("\n\n\n")) + 2 * IDLE_PARSES  # the file, and the last edits' pieces


def test_a_long_session_keeps_a_bounded_amount(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONTRACEMALLOC", "1")  # the server traces its allocations (one frame: cheap)

    async def stats(editor: Editor) -> dict:
        answer = await asyncio.wait_for(editor.client.protocol.send_request_async("cg-lint/stats", {}), WAIT)
        return answer if isinstance(answer, dict) else answer._asdict()  # pygls: a named tuple

    async def linted(editor: Editor, uri: str) -> None:
        """Until the diagnostics of the current version: one lint per edit, none coalesced (the
        empty ones a close publishes have no version)."""
        while True:
            params = await asyncio.wait_for(editor.published.get(), WAIT)
            if params.uri == uri and params.version == editor.versions[uri]:
                return

    async def session() -> list[dict]:
        editor = Editor(tmp_path)
        await editor.start()
        try:
            uri = (tmp_path / "model.py").as_uri()
            editor.open(uri, edited(0))
            await linted(editor, uri)
            seen = []
            for n in range(1, WARM + 3 * STRIDE + 1):
                if n % 16 == 0:  # closed and opened again: nothing of the earlier opening stays
                    editor.client.text_document_did_close(
                        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
                    editor.open(uri, edited(n))
                else:
                    editor.change(uri, edited(n))
                await linted(editor, uri)
                if n in (WARM + STRIDE, WARM + 2 * STRIDE, WARM + 3 * STRIDE):
                    seen.append(await stats(editor))
            return seen
        finally:
            await editor.kill()

    first, second, third = asyncio.run(session())
    assert first["traced"] is not None, "the server did not trace its allocations"
    assert {k: second[k] for k in KEPT} == {k: first[k] for k in KEPT} == {k: third[k] for k in KEPT}
    assert third["futures"] <= 1  # the stats request's own
    assert third["documents"] == third["linted"] == third["asts"] == 1
    # before the bounds, each edit left ~6 KB or more behind (some 400 KB over STRIDE edits), in
    # every stride; a one-off growth (Python resizing its table of interned strings, ~0.5 MB) lands
    # in one stride at most, so the quieter of two strides is what the edits themselves keep
    growth = min(second["traced"] - first["traced"], third["traced"] - second["traced"])
    assert growth < 64 * 1024, f"{growth} bytes more after {STRIDE} more edits: {first} -> {second} -> {third}"

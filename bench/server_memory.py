"""The memory of ``cg-lint server`` over a long session: 10,000 edits.

    python bench/server_memory.py [--edits 10000] [--lines 600] [--every 1000]

A plain JSON-RPC client (blocking pipes) opens one generated module full of custom gradients
(bench/gen_cg.py) and sends whole-text changes, each editing two constants (as typing does): one
in a custom gradient's grad (the statement is parsed and walked again) and one in a line the
prefilter blanks; every 50th also adds or removes a function (new statements, new records). Every
200th edit it closes and reopens the document, and every 10th edit asks for code actions. It waits
for the diagnostics of each version (so every edit is linted, none coalesced). Printed every
``--every`` edits: the server's resident memory (VmRSS) and its peak (VmHWM) from ``/proc``
(Linux), the mean latency, and what the server keeps (its ``cg-lint/stats`` request: parsed
pieces, walk entries, pygls' futures). Bounded memory: the RSS after the warm-up stays flat.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.gen_cg import generate  # noqa: E402


class Peer:
    def __init__(self, cwd: str) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT), CG_LINT_CACHE_DIR=os.path.join(cwd, "cache"))
        self.proc = subprocess.Popen([sys.executable, "-m", "cg_lint", "server"], cwd=cwd, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.next_id = 0

    def send(self, method: str, params: dict, request: bool = False) -> int | None:
        message: dict = {"jsonrpc": "2.0", "method": method, "params": params}
        if request:
            self.next_id += 1
            message["id"] = self.next_id
        body = json.dumps(message).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()
        return message.get("id")

    def receive(self) -> dict:
        out = self.proc.stdout
        assert out is not None
        length = 0
        while True:
            line = out.readline()
            if not line:
                raise EOFError("the server ended")
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
            elif line == b"\r\n":
                return json.loads(out.read(length))

    def until(self, test) -> dict:
        while True:
            message = self.receive()
            if test(message):
                return message

    def memory(self) -> tuple[int, int]:
        """(VmRSS, VmHWM) in MB."""
        fields = {}
        with open(f"/proc/{self.proc.pid}/status") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        return int(fields["VmRSS"].split()[0]) // 1024, int(fields["VmHWM"].split()[0]) // 1024


def kept(peer: Peer) -> str:
    """The server's own count of what it keeps ("" when it has no stats request)."""
    request = peer.send("cg-lint/stats", {}, True)
    answer = peer.until(lambda m: m.get("id") == request)
    stats = answer.get("result")
    if not isinstance(stats, dict):
        return ""
    return f"{stats['chunks']:>7}  {stats['nodes']:>7}  {stats['futures']:>7}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--edits", type=int, default=10_000)
    parser.add_argument("--lines", type=int, default=600)
    parser.add_argument("--every", type=int, default=1000)
    args = parser.parse_args()
    base = generate(args.lines)
    with tempfile.TemporaryDirectory() as tmp:
        peer = Peer(tmp)
        peer.send("initialize", {"processId": None, "rootUri": Path(tmp).as_uri(), "capabilities": {}}, True)
        peer.until(lambda m: m.get("id") == 1)
        peer.send("initialized", {})
        uri = Path(tmp, "model.py").as_uri()
        version = 1

        def published(m: dict) -> bool:
            return (m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
                    and m["params"].get("version") == version)

        def open_document(text: str) -> None:
            peer.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python",
                                                                "version": version, "text": text}})
            peer.until(published)

        open_document(base)
        print(f"{len(base.splitlines())} lines; after open: RSS {peer.memory()[0]} MB")
        print(f"{'edits':>6}  {'RSS MB':>6}  {'peak MB':>7}  {'ms/edit':>7}  {'pieces':>7}  {'walks':>7}"
              f"  {'futures':>7}")
        started = time.perf_counter()
        reports: list[tuple[int, int, float]] = []  # (edits, RSS MB, ms/edit)
        extra = ""
        for edit in range(1, args.edits + 1):
            if edit % 50 == 0:  # statements come and go
                extra = "" if extra else f"\n\n@tf.custom_gradient\ndef added_{edit}(x):\n    return x, lambda dy: dy\n"
            text = base.replace("dy * 2.0", f"dy * 2.{edit}", 1).replace("0.5", f"0.{edit}", 1) + extra
            if edit % 200 == 0:
                peer.send("textDocument/didClose", {"textDocument": {"uri": uri}})
                version = 1
                open_document(text)
            else:
                version += 1
                peer.send("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                     "contentChanges": [{"text": text}]})
                peer.until(published)
            if edit % 10 == 0:
                request = peer.send("textDocument/codeAction", {
                    "textDocument": {"uri": uri}, "context": {"diagnostics": []},
                    "range": {"start": {"line": 0, "character": 0}, "end": {"line": 40, "character": 0}}}, True)
                peer.until(lambda m, r=request: m.get("id") == r)
            if edit % args.every == 0:
                elapsed = (time.perf_counter() - started) * 1000 / args.every
                rss, peak = peer.memory()
                print(f"{edit:>6}  {rss:>6}  {peak:>7}  {elapsed:>7.1f}  {kept(peer)}", flush=True)
                reports.append((edit, rss, elapsed))
                started = time.perf_counter()
        if len(reports) > 1:  # after the first report's edits (the warm-up)
            (first, low, _), (last, high, _) = reports[0], reports[-1]
            mean = sum(r[2] for r in reports) / len(reports)
            print(f"RSS from edit {first} to {last}: {high - low:+d} MB "
                  f"({(high - low) * 1000 / (last - first):+.2f} MB per 1,000 edits); mean {mean:.1f} ms/edit")
        peer.send("shutdown", {}, True)
        peer.until(lambda m: m.get("id") == peer.next_id)
        peer.send("exit", {})
        if select.select([], [], [], 0) is not None:
            peer.proc.wait(30)


if __name__ == "__main__":
    main()

"""Latency of ``cg-lint server`` from didChange to publishDiagnostics, as an editor sees it.

    python bench/bench_server.py [--lines 2000] [--saves 20]

The server runs as a subprocess over stdio (``python -m cg_lint server``); this script is a plain
JSON-RPC client (blocking pipes, no event loop of its own, so what it measures is the server). The
document is the generated module full of custom gradients (bench/gen_cg.py). Each measured change
sends the whole text (the server asks for full sync) and waits for the diagnostics of exactly that
version; the clock runs from just before the change is written to just after the diagnostics are
read, and the server's CPU time per change (all its threads) is read from ``/proc`` on Linux.
Kinds, interleaved so that machine load affects them alike (with the baseline below):

- edited: one more function differs from the previous text (a constant in its body), as typing does;
- unchanged: the same text again under a new version (what a save without edits costs).

The baseline, measured in this process between the server's changes: the flake8 plugin's ``run()``
on the same edits, warm, with flake8's ``ast`` built outside the clock (bench_lint.py's per-save
row). The first publish after didOpen is reported apart: it imports libcst and parses everything.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.gen_cg import generate  # noqa: E402

TIMEOUT = 120.0


class Client:
    """JSON-RPC over the server's stdin/stdout, with Content-Length framing."""

    def __init__(self, cwd: Path) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT), CG_LINT_CACHE_DIR=str(cwd / "cache"))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cg_lint", "server"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.next_id = 0
        self.buffer = b""

    def send(self, method: str, params: object, request: bool = False) -> int | None:
        message: dict = {"jsonrpc": "2.0", "method": method, "params": params}
        ident = None
        if request:
            self.next_id += 1
            ident = message["id"] = self.next_id
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()
        return ident

    def _read(self, deadline: float) -> dict:
        fd = self.proc.stdout.fileno()
        while True:
            head, sep, rest = self.buffer.partition(b"\r\n\r\n")
            if sep:
                length = int(re.search(rb"Content-Length: (\d+)", head).group(1))
                if len(rest) >= length:
                    self.buffer = rest[length:]
                    return json.loads(rest[:length])
            if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
                raise TimeoutError("the server did not answer in time")
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise EOFError("the server closed its output")
            self.buffer += chunk

    def wait_for(self, match) -> dict:
        deadline = time.monotonic() + TIMEOUT
        while True:
            message = self._read(deadline)
            if message.get("method") == "client/registerCapability" and "id" in message:
                self._reply(message["id"])
            elif match(message):
                return message

    def _reply(self, ident: int) -> None:
        body = json.dumps({"jsonrpc": "2.0", "id": ident, "result": None}).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def request(self, method: str, params: object) -> dict:
        ident = self.send(method, params, request=True)
        return self.wait_for(lambda m: m.get("id") == ident and "method" not in m)

    def diagnostics(self, uri: str, version: int) -> list:
        message = self.wait_for(
            lambda m: (
                m.get("method") == "textDocument/publishDiagnostics"
                and m["params"]["uri"] == uri
                and m["params"].get("version") == version
            )
        )
        return message["params"]["diagnostics"]

    def close(self) -> int | None:
        try:
            self.request("shutdown", None)
            self.send("exit", None)
            return self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


def server_cpu(pid: int) -> float | None:
    """CPU seconds the process has run, all threads (Linux ``schedstat``: nanoseconds); None
    elsewhere."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
        total = 0
        for task in tasks:
            with open(f"/proc/{pid}/task/{task}/schedstat") as fh:
                total += int(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return total / 1e9


def edit(text: str, ops: list[str], k: int) -> str:
    """One function changed: a constant in the k-th op's body (as bench_lint.py's per-save edit)."""
    name = ops[k % len(ops)]
    edited = re.sub(rf"(def {name}\(.*\n.*\n    y = )", rf"\g<1>{k + 2}.0 * ", text, count=1)
    assert edited != text
    return edited


def measure(lines: int, saves: int) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="cg-bench-server-"))
    path = folder / "ops_full_of_custom_gradients.py"
    text = generate(lines)
    path.write_text(text)
    uri = path.as_uri()
    ops = re.findall(r"^def (op_\d+)\(", text, re.M)
    client = Client(folder)
    try:
        client.request(
            "initialize", {"processId": os.getpid(), "rootUri": folder.as_uri(), "capabilities": {}}
        )
        client.send("initialized", {})
        version = 1
        start = time.perf_counter()
        client.send(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": uri,
                    "languageId": "python",
                    "version": version,
                    "text": text,
                }
            },
        )
        found = client.diagnostics(uri, version)
        first = time.perf_counter() - start
        server_cpus: list[float] = []  # CPU time the server spent per change (all its threads)
        plugin_cpus: list[float] = []

        def change(new: str) -> tuple[float, int]:
            nonlocal version
            version += 1
            cpu = server_cpu(client.proc.pid)
            start = time.perf_counter()
            client.send(
                "textDocument/didChange",
                {
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": [{"text": new}],
                },
            )
            diagnostics = client.diagnostics(uri, version)
            seconds = time.perf_counter() - start
            if cpu is not None:
                server_cpus.append(server_cpu(client.proc.pid) - cpu)
            return seconds, len(diagnostics)

        # the baseline, in this process: the flake8 plugin's run() on the same kind of edit, warm
        # (flake8's ast and lines built outside the clock), as bench_lint.py's per-save rows
        from cg_lint.flake8_plugin import Plugin

        Plugin._use_cache = False  # what a warm process computes, not what a disk cache remembers

        def plugin_save(new: str) -> float:
            lines, tree = new.splitlines(keepends=True), ast.parse(new)
            start, cpu = time.perf_counter(), time.thread_time()
            out = list(Plugin(tree, lines, str(path)).run())
            plugin_cpus.append(time.thread_time() - cpu)
            assert len(out) == len(found)
            return time.perf_counter() - start

        plugin_text = text
        plugin_save(plugin_text)
        edited, unchanged, plugin, current = [], [], [], text
        for k in range(saves):  # interleaved, so that machine load affects all alike
            current = edit(current, ops, k)
            seconds, count = change(current)
            assert count == len(found), "an edited constant changes no finding"
            edited.append(seconds)
            unchanged.append(change(current)[0])
            plugin_text = edit(plugin_text, ops, k)
            plugin.append(plugin_save(plugin_text))
        edited_cpu = server_cpus[0::2]  # the edited changes (the unchanged ones alternate)
        exit_code = client.close()
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
    return {
        "lines": text.count("\n"),
        "findings": len(found),
        "first_ms": 1e3 * first,
        "saves": saves,
        "edited_ms": [1e3 * min(edited), 1e3 * statistics.median(edited)],
        "unchanged_ms": [1e3 * min(unchanged), 1e3 * statistics.median(unchanged)],
        "plugin_ms": [1e3 * min(plugin), 1e3 * statistics.median(plugin)],
        "edited_cpu_ms": [1e3 * min(edited_cpu), 1e3 * statistics.median(edited_cpu)]
        if edited_cpu
        else None,
        "plugin_cpu_ms": [1e3 * min(plugin_cpus), 1e3 * statistics.median(plugin_cpus)],
        "exit": exit_code,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--saves", type=int, default=20)
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args()
    result = measure(args.lines, args.saves)
    if args.json:
        print(json.dumps(result))
        return 0
    lines, findings, saves = result["lines"], result["findings"], result["saves"]
    print(f"cg-lint server, {lines:,}-line generated file, {findings} diagnostics, {saves} changes")
    print("| measure | best | median | goal |")
    print("|---|---|---|---|")
    edited, unchanged = result["edited_ms"], result["unchanged_ms"]
    print(
        f"| didChange -> publishDiagnostics, one function edited | {edited[0]:.0f} ms | "
        f"{edited[1]:.0f} ms | <= 50 ms |"
    )
    print(
        f"| didChange -> publishDiagnostics, text unchanged | {unchanged[0]:.0f} ms | "
        f"{unchanged[1]:.0f} ms | |"
    )
    print(
        f"| baseline: the flake8 plugin's run() in a warm process, one function edited | "
        f"{result['plugin_ms'][0]:.0f} ms | {result['plugin_ms'][1]:.0f} ms | |"
    )
    if result["edited_cpu_ms"] is not None:
        cpu, base = result["edited_cpu_ms"], result["plugin_cpu_ms"]
        print(f"| CPU time of the server per edited change | {cpu[0]:.0f} ms | {cpu[1]:.0f} ms | |")
        print(
            f"| CPU time of the plugin's run() per edit | {base[0]:.0f} ms | {base[1]:.0f} ms | |"
        )
    print(
        f"| didOpen -> first publishDiagnostics (imports libcst, parses everything) | "
        f"{result['first_ms']:.0f} ms | | |"
    )
    print(f"server exit code after shutdown/exit: {result['exit']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

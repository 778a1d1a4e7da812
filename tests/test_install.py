"""Installing as a user does: build the sdist and the wheel, install the wheel into a fresh
virtualenv and run every entry point from there, outside the clone.

CI runs this (it is slow: two builds and an install, with setuptools, libcst and pygls fetched
from PyPI). Nothing of this checkout is on the path of what runs in the virtualenv.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlparse
from urllib.request import url2pathname

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from lint_helpers import ROOT

ARITY = ROOT / "examples" / "arity.py"
# what a build never needs: local state, caches, the bench's results
SKIP = shutil.ignore_patterns(".git", ".venv", "venv", "__pycache__", "*.egg-info", "build", "dist", ".hypothesis",
                              ".mypy_cache", ".ruff_cache", ".pytest_cache", "results")


def test_the_all_extra_is_every_user_extra():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert sorted(extras["all"]) == sorted({*extras["runtime"], *extras["server"], *extras["plot"]})
    assert "build" in extras["test"]


def run(*command: str | Path, cwd: Path, env: dict[str, str], timeout: float = 900,
        stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in command], cwd=cwd, env=env, input=stdin, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], Path]:
    """(the virtualenv's bin folder, its environment, a folder outside the clone)."""
    pytest.importorskip("build")
    top = tmp_path_factory.mktemp("install")
    source = top / "source"
    shutil.copytree(ROOT, source, ignore=SKIP)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(CG_LINT_CACHE_DIR=str(top / "cache"), NO_COLOR="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    # the sdist, then the wheel built from the sdist: what a release publishes
    built = run(sys.executable, "-m", "build", "--outdir", top / "dist", source, cwd=top, env=env)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    wheels, sdists = sorted((top / "dist").glob("*.whl")), sorted((top / "dist").glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, list((top / "dist").iterdir())
    venv = top / "venv"
    made = run(sys.executable, "-m", "venv", venv, cwd=top, env=env)
    assert made.returncode == 0, made.stderr
    bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
    env["PATH"] = os.pathsep.join([str(bin_dir), env.get("PATH", "")])
    env["VIRTUAL_ENV"] = str(venv)
    # as the README says (a venv's own pip may be too old for `name @ git+URL`)
    upgrade = run(bin_dir / "python", "-m", "pip", "install", "--quiet", "--upgrade", "pip", cwd=top, env=env)
    assert upgrade.returncode == 0, upgrade.stderr[-3000:]
    pip = run(bin_dir / "python", "-m", "pip", "install", "--quiet", f"{wheels[0]}[server]", "flake8",
              cwd=top, env=env)
    assert pip.returncode == 0, pip.stdout[-3000:] + pip.stderr[-3000:]
    work = top / "work"
    work.mkdir()
    shutil.copy(ARITY, work / "arity.py")
    return bin_dir, env, work


@pytest.mark.slow
def test_the_package_comes_from_the_virtualenv(installed):
    bin_dir, env, work = installed
    where = run(bin_dir / "python", "-c", "import cg_lint, runtime_check; print(cg_lint.__file__)",
                cwd=work, env=env)
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(bin_dir.parent) and not Path(where.stdout).is_relative_to(ROOT)


@pytest.mark.slow
def test_cg_lint_and_runtime_check_entry_points(installed):
    bin_dir, env, work = installed
    lint = run("cg-lint", "--format", "concise", "arity.py", cwd=work, env=env)
    assert lint.returncode == 1 and lint.stdout.count("arity.py:") == 3, lint.stdout + lint.stderr
    assert run("cg-lint", "--version", cwd=work, env=env).stdout.startswith("cg-lint ")
    assert "CG109  not-twice-differentiable" in run("cg-lint", "rule", "--all", cwd=work, env=env).stdout
    assert "## Why is this bad?" in run("cg-lint", "rule", "CG003", cwd=work, env=env).stdout
    helped = run("runtime-check", "--help", cwd=work, env=env)
    assert helped.returncode == 0 and "usage: runtime-check" in helped.stdout, helped.stderr
    # TensorFlow is the `runtime` extra, not installed here: one line that says how to get it
    no_tf = run("runtime-check", "arity.py", cwd=work, env=env)
    assert no_tf.returncode == 2 and "the 'runtime' extra" in no_tf.stderr, no_tf.stderr
    assert "Traceback" not in no_tf.stderr


@pytest.mark.slow
def test_the_flake8_plugin(installed):
    bin_dir, env, work = installed
    version = run("flake8", "--version", cwd=work, env=env)
    assert "cg-lint" in version.stdout, version.stdout
    proc = run("flake8", "--select", "CG", "arity.py", cwd=work, env=env)
    assert proc.returncode == 1 and [line.split(": ")[1].split()[0] for line in proc.stdout.splitlines()] == [
        "CG003", "CG001", "CG002"], proc.stdout + proc.stderr


@pytest.mark.slow
def test_the_language_server(installed):
    """`cg-lint server` as an editor starts it: diagnostics for an opened file, each linking to a
    rule page that exists on this machine (the wheel has no docs/: the page is rendered)."""
    bin_dir, env, work = installed
    server = subprocess.Popen(["cg-lint", "server"], cwd=work, env=env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    client = Client(server)
    try:
        client.request("initialize", {"processId": os.getpid(), "rootUri": work.as_uri(), "capabilities": {}})
        client.notify("initialized", {})
        uri = (work / "arity.py").as_uri()
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": ARITY.read_text(encoding="utf-8")}})
        diagnostics = client.diagnostics(uri)
        assert sorted(d["code"] for d in diagnostics) == ["CG001", "CG002", "CG003"]
        for d in diagnostics:
            page = urlparse(d["codeDescription"]["href"])
            path = Path(url2pathname(page.path))
            assert page.scheme == "file" and path.is_file() and not path.is_relative_to(ROOT), d
            assert path.read_text(encoding="utf-8").startswith(f"# {d['code']}: ")
        client.request("shutdown", None)
        client.notify("exit", None)
        assert server.wait(timeout=60) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


class Client:
    """The least of an LSP client: framed JSON-RPC over the server's stdio, answering its requests."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.process = process
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if not line.strip():
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            assert length is not None
            self.messages.put(json.loads(stream.read(length)))

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def notify(self, method: str, params: Any) -> None:
        self._send({"method": method, "params": params})

    def request(self, method: str, params: Any) -> Any:
        self.next_id += 1
        self._send({"id": self.next_id, "method": method, "params": params})
        reply = self._wait(lambda m: m.get("id") == self.next_id and "method" not in m)
        assert "error" not in reply, reply
        return reply.get("result")

    def diagnostics(self, uri: str) -> list[dict[str, Any]]:
        found = self._wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                           and m["params"]["uri"] == uri and m["params"]["diagnostics"])
        return found["params"]["diagnostics"]

    def _wait(self, wanted, timeout: float = 120) -> dict[str, Any]:
        while True:
            try:
                message = self.messages.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError("the server said nothing more") from None
            if "method" in message and "id" in message:  # a request of the server's (registrations)
                self._send({"id": message["id"], "result": None})
            if wanted(message):
                return message


@pytest.mark.slow
def test_a_wheel_builds_from_a_git_url(installed, tmp_path):
    """`pip install "cg-lint @ git+URL"`: the committed tree builds (here from this clone's URL)."""
    bin_dir, env, work = installed
    url = f"cg-lint[all] @ git+{ROOT.as_uri()}"
    proc = run(bin_dir / "python", "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", tmp_path, url, cwd=work,
               env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert [p.name for p in tmp_path.glob("*.whl")] == ["cg_lint-0.1.0-py3-none-any.whl"]

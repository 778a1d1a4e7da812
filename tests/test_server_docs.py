"""docs/editors.md against the real thing: each editor's snippet starts what the tests start, the
output shown is what the command prints, and every documented option does what the page says."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tomllib

import pytest

from lint_helpers import ROOT

pytest.importorskip("pygls.lsp.client")
from lsprotocol import types  # noqa: E402

from test_server import ARITY, Editor, run, server_without_pygls  # noqa: E402

DOC = (ROOT / "docs" / "editors.md").read_text(encoding="utf-8")
COMMAND = ["cg-lint", "server"]


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC, re.S)


def test_vs_code_settings_start_the_server_and_name_the_fix_all_kind():
    settings, pylsp = (json.loads(b) for b in blocks("json"))
    assert [settings["glspc.server.command"], *settings["glspc.server.commandArguments"]] == COMMAND
    assert settings["glspc.server.languageId"] == ["python"]
    assert list(settings["editor.codeActionsOnSave"]) == ["source.fixAll.cg-lint"]
    assert pylsp == {
        "pylsp.plugins.flake8.enabled": True,
        "pylsp.plugins.pyflakes.enabled": False,
        "pylsp.plugins.pycodestyle.enabled": False,
    }


def test_neovim_helix_and_emacs_start_the_server():
    lua = blocks("lua")
    assert len(lua) == 2 and all('cmd = { "cg-lint", "server" }' in b for b in lua)
    assert all('"python"' in b for b in lua)
    [helix] = (tomllib.loads(b) for b in blocks("toml"))
    assert [
        helix["language-server"]["cg-lint"]["command"],
        *helix["language-server"]["cg-lint"]["args"],
    ] == COMMAND
    assert (
        "cg-lint" in helix["language"][0]["language-servers"]
        and helix["language"][0]["name"] == "python"
    )
    [elisp] = blocks("elisp")
    assert '("cg-lint" "server")' in elisp and "python-mode" in elisp


def test_the_line_without_pygls_is_what_the_command_prints(tmp_path):
    [shown] = [b for b in blocks("text") if "pygls" in b]
    proc = server_without_pygls(tmp_path)
    assert (proc.returncode, proc.stderr) == (2, shown)
    assert '$ python -m pip install ".[server]"' in DOC
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert extras["server"] == ["pygls>=2", "lsprotocol"] and set(extras["server"]) <= set(
        extras["test"]
    )


def test_the_documented_cache_flags_exist(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cli = subprocess.run(
        [sys.executable, "-m", "cg_lint", "--help"], capture_output=True, text=True, env=env
    )
    f8 = subprocess.run(
        [sys.executable, "-m", "flake8", "--help"], capture_output=True, text=True, env=env
    )
    for flag in re.findall(r"`(--[a-z-]+)", DOC.split("## The result cache")[1]):
        assert flag in (cli.stdout + f8.stdout), flag
    assert "cache-dir" in (ROOT / "cg_lint" / "config.py").read_text()


def test_links_from_readme_and_to_bench_resolve():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "](docs/editors.md)" in readme and "](docs/editors.md#the-result-cache)" in readme
    assert "\n## The result cache\n" in DOC
    bench = (ROOT / "bench" / "README.md").read_text(encoding="utf-8")
    assert "bench/README.md#editors-the-server-and-fresh-flake8-processes" in DOC
    assert "\n## Editors: the server and fresh flake8 processes\n" in bench


def test_documented_options_are_the_ones_the_server_reads():
    table = DOC.split("Initialization options")[1].split("###")[0]
    assert re.findall(r"^\| `(\w+)` \|", table, re.M) == ["debounceMs", "ruleUrl"]
    app = (ROOT / "cg_lint" / "server" / "app.py").read_text()
    assert all(f'"{name}"' in app for name in ("debounceMs", "ruleUrl"))


def test_rule_url_option_and_advertised_capabilities(tmp_path):
    uri = (tmp_path / "arity.py").as_uri()

    async def main():
        editor = Editor(tmp_path)
        result = await editor.start({"ruleUrl": "https://example.org/rules/{code}.html"})
        try:
            caps = result.capabilities
            assert caps.hover_provider
            assert set(caps.code_action_provider.code_action_kinds) == {
                "quickfix",
                "source.fixAll.cg-lint",
            }
            assert caps.text_document_sync.change == types.TextDocumentSyncKind.Full
            editor.open(uri, ARITY)
            hrefs = {d.code_description.href for d in await editor.diagnostics(uri)}
            assert hrefs == {
                f"https://example.org/rules/{c}.html" for c in ("CG001", "CG002", "CG003")
            }
            hover = await editor.hover(uri, 15, 8)
            assert "(https://example.org/rules/CG003.html)" in hover.contents.value
        finally:
            await editor.kill()

    asyncio.run(main())


def test_debounce_coalesces_quick_changes(tmp_path):
    uri = (tmp_path / "arity.py").as_uri()

    async def session(editor: Editor):
        editor.open(uri, ARITY)  # opening is linted at once
        assert len(await editor.diagnostics(uri)) == 3
        editor.change(uri, ARITY + "\n")
        editor.change(uri, "\n" + ARITY)  # within the delay: only this version is linted
        first = await asyncio.wait_for(editor.published.get(), 60)
        assert (first.uri, first.version) == (uri, 3)
        assert sorted(d.range.start.line for d in first.diagnostics) == [16, 31, 39]
        assert editor.published.empty()

    run(session, tmp_path, {"debounceMs": 1500})

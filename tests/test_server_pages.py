"""Each diagnostic links to a page that exists on this machine (``codeDescription``), or to none."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

import pytest

pytest.importorskip("lsprotocol")

from cg_lint.docs import code_page  # noqa: E402
from cg_lint.findings import Finding  # noqa: E402
from cg_lint.server import convert, pages  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def local(uri: str) -> Path:
    parsed = urlparse(uri)
    assert parsed.scheme == "file", uri
    return Path(url2pathname(parsed.path))


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """As from a wheel: no docs/ beside the package, a cache folder of the test's own."""
    monkeypatch.setattr(pages, "_CHECKOUT", tmp_path / "site-packages")
    monkeypatch.setattr(pages, "_known", {})
    monkeypatch.setenv("CG_LINT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_in_a_checkout_the_link_is_the_page_in_docs():
    for code in ("CG003", "CG101", "CG999"):
        path = local(pages.rule_url(code).split("#")[0])
        assert path.is_file() and ROOT in path.parents, path


def test_installed_pages_are_rendered_once_and_say_what_cg_lint_rule_says(installed):
    for code in ("CG003", "CG018", "CG105", "CG999"):
        uri = pages.rule_url(code)
        path = local(uri)
        assert installed in path.parents and path.read_text(encoding="utf-8") == code_page(code)
    assert pages.rule_url("CG003") == uri.replace("CG999", "CG003")
    assert pages.rule_url("XX123") is None


def test_an_unwritable_cache_means_no_link_not_a_broken_one(installed):
    if os.geteuid() == 0:
        installed.parent.joinpath("file").write_text("")
        os.environ["CG_LINT_CACHE_DIR"] = str(installed.parent / "file")  # a folder cannot be made under a file
    else:
        installed.mkdir()
        installed.chmod(stat.S_IRUSR | stat.S_IXUSR)
    finding = Finding("m.py", 1, 1, "CG003", "message")
    diagnostic = convert.diagnostic(["x = 1"], finding, convert.utf16_units)
    assert diagnostic.code_description is None
    assert "rule page](" not in convert.hover_markdown(["CG003"])
    assert convert.diagnostic(["x = 1"], finding, convert.utf16_units, "https://example.org/{code}").code_description


def test_no_placeholder_addresses_in_the_package():
    for path in [*ROOT.glob("cg_lint/**/*.py"), *ROOT.glob("runtime_check/**/*.py")]:
        assert "example.invalid" not in path.read_text(encoding="utf-8"), path

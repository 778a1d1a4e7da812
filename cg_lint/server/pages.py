"""Where a diagnostic's ``codeDescription`` points: a rule page that exists on this machine.

In a source checkout the page is the file in ``docs/rules/`` (or the runtime-check page). An
installed wheel has no ``docs/``, so the page is rendered from the installed rule classes (the
text ``cg-lint rule CODE`` prints) into a folder beside the result cache, once per version of
cg-lint's code, and linked as a ``file://`` URI. A page that cannot be written means no link: an
editor shows the code without one rather than a link to nothing.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from cg_lint.codes import CODES, RULE_PAGES

_CHECKOUT = Path(__file__).resolve().parent.parent.parent
_known: dict[str, str | None] = {}  # code -> URI, per process (a page is written once)


def rule_url(code: str, template: str | None = None) -> str | None:
    """The code's page as a URI, None when there is none; ``template`` (the ``ruleUrl`` option,
    with ``{code}``) replaces it."""
    if template:
        return template.format(code=code)
    if code not in _known:
        _known[code] = _checkout_page(code) or _rendered_page(code)
    return _known[code]


def _checkout_page(code: str) -> str | None:
    entry = CODES.get(code)
    page = entry.page if entry is not None else f"{RULE_PAGES}/{code}.md"
    path, _, anchor = page.partition("#")
    local = _CHECKOUT / path
    if local.is_file():
        return local.as_uri() + (f"#{anchor}" if anchor else "")
    return None


def _rendered_page(code: str) -> str | None:
    from cg_lint.docs import code_page
    from cg_lint.result_cache import code_fingerprint, default_dir

    text = code_page(code)
    if text is None:
        return None
    folder = Path(default_dir()) / f"pages-{code_fingerprint()[:16]}"
    target = folder / f"{code}.md"
    try:
        if not (target.is_file() and target.read_text(encoding="utf-8") == text):
            folder.mkdir(parents=True, exist_ok=True)
            _write_atomic(target, text)
    except (OSError, UnicodeDecodeError):
        return None
    return target.resolve().as_uri()


def _write_atomic(target: Path, text: str) -> None:
    """Written whole under another name, then renamed: an editor never opens half a page."""
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise

"""``# noqa`` handling for the standalone CLI (flake8 applies its own)."""

from __future__ import annotations

import re

# flake8's own pattern: codes match by prefix, so a `noqa: CG` comment silences every CG code
NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?", re.IGNORECASE)


def is_suppressed(line_text: str, code: str) -> bool:
    match = NOQA.search(line_text)
    if match is None:
        return False
    codes = match.group("codes")
    if not codes:
        return True
    return any(code.startswith(c.upper()) for c in re.split(r"[,\s]+", codes.strip()) if c)

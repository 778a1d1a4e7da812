"""How runtime-check shows a path: relative to the working folder when it is below it, else as given."""

from __future__ import annotations

import os


def shown_path(path: str) -> str:
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive
        return path
    return path if relative.startswith("..") else relative

"""What a project-wide decision reads from disk, as one digest: the flake8 plugin keeps the
decision (is this definition traced?) in the result cache under it, so a fresh process checks a
cached decision with one walk of the project's folders and a ``stat`` per module instead of reading
and searching them.

The digest covers everything ``cg_lint.project`` looks at besides the linted file's own text (the
result cache's key already holds it): the project's root and the markers that place it, the list of
its modules (one that appears or disappears changes it), each module's size, mtime_ns, ctime_ns and
inode, and the ``__init__.py`` files that make a module part of a package. A module changed within
``SETTLE_NS`` may change again within the file system's timestamp granularity without changing
its ``stat``: a digest taken then is not *settled*, and nothing is kept under it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from cg_lint.project.layout import LIBRARY_MARKERS, ROOT_MARKERS, project_root, walk_modules

SETTLE_NS = 3_000_000_000


def snapshot(path: str) -> tuple[str, bool] | None:
    """(the digest of the project around ``path`` as the search would read it, whether it is
    settled); None when it cannot be taken (an unreadable folder: decide afresh)."""
    from cg_lint.result_cache import _hasher

    here = os.path.abspath(path)
    root = project_root(here)
    digest = _hasher(person=b"cg-lint-project")
    newest = 0
    try:
        parts = [f"root\0{root}\n"]
        # the markers that placed the root (one added below it moves the root) and the packages
        # around the file (library_package)
        folder = Path(here).parent
        for place in (folder, *folder.parents):
            for marker in (*ROOT_MARKERS, "__init__.py"):
                at = place / marker
                if os.path.lexists(at):
                    parts.append(f"m\0{at}\0{os.path.isfile(at)}\n")
            if str(place) == root:
                break
        for marker in LIBRARY_MARKERS:
            if os.path.isfile(os.path.join(root, marker)):
                parts.append(f"lib\0{marker}\n")
        for module in walk_modules(root):
            if module is None:
                parts.append("truncated\n")
                break
            if module == here:  # its text is the linted one, keyed with it
                parts.append(f"self\0{module}\n")
                continue
            try:
                st = os.stat(module)
            except FileNotFoundError:
                parts.append(f"gone\0{module}\n")
                continue
            newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
            parts.append(f"f\0{module}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}\0{st.st_dev}\n")
    except (OSError, ValueError):
        return None
    digest.update("".join(parts).encode("utf-8", "surrogatepass"))
    return digest.hexdigest(), newest < time.time_ns() - SETTLE_NS

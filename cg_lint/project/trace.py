"""Whether a custom gradient can run under ``tf.function``, decided from what the project does.

The search walks from the definition to its callers (and theirs), across the project's modules,
until it meets a trace root: a ``tf.function``, a Keras ``call``/``train_step``/... (Keras traces
them in ``fit``), a function handed to ``tf.data`` ``map``, ``strategy.run``, ``tf.cond``...; or a
public function of an installable library, which its users may trace. Calls at a module's top level
or under ``if __name__ == "__main__":``, and functions handed to ``tf.py_function``, run eagerly and
are not followed. Nothing found within the budget: the definition is taken to run eagerly, and the
graph-mode rules stay quiet ("when in doubt, stay quiet").
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass

from cg_lint.project.layout import project_root
from cg_lint.project.modules import Project
from cg_lint.project.scan import CallShape, ModuleScan

MAX_DEPTH = 8
MAX_NODES = 400


@dataclass(frozen=True)
class Verdict:
    traced: bool
    why: str  # how it is reached under tf.function, or why nothing is (for notes and docs)
    by_library: bool = False  # traced only because a library's users may trace its public API


@dataclass(frozen=True)
class _Node:
    path: str
    qualname: str
    depth: int


class TraceContexts:
    """Verdicts for the custom gradients of a run, one project per root, each searched once."""

    def __init__(self, overlays: dict[str, str] | None = None) -> None:
        # texts newer than the files on disk (an editor's buffer), by absolute path
        self.overlays: dict[str, str] = {}
        self._projects: dict[str, Project] = {}
        self._verdicts: dict[tuple[str, str, bool], Verdict] = {}
        for path, text in (overlays or {}).items():
            self.overlay(path, text)

    def refresh(self) -> None:
        """Read the files again (they changed on disk: a save, a checkout)."""
        self._projects.clear()
        self._verdicts.clear()

    def overlay(self, path: str, text: str) -> None:
        """Use ``text`` for ``path`` instead of the file (an editor's unsaved buffer)."""
        key = os.path.abspath(path)
        if self.overlays.get(key) != text:
            self.overlays[key] = text
            self._verdicts.clear()

    def forget(self, path: str) -> None:
        """Read ``path`` from its file again (the editor closed its buffer): a session that opens
        many files keeps the texts of those still open only."""
        if self.overlays.pop(os.path.abspath(path), None) is not None:
            self._verdicts.clear()

    def project_of(self, path: str) -> Project:
        root = project_root(path)
        found = self._projects.get(root)
        if found is None:
            found = self._projects[root] = Project(root, self.overlays)
        return found

    def calls(self, path: str, qualname: str) -> list[tuple[str, CallShape]]:
        """The project's calls of a module-level function or method by its name (other modules
        only for a public name), with where they are."""
        if "<locals>" in qualname:
            return []
        project = self.project_of(path)
        name = qualname.rsplit(".", 1)[-1]
        here = os.path.abspath(path)
        where = [here] if name.startswith("_") else list(project.mentioning(name))
        return [(p, c) for p in where for c in project.scan(p).calls.get(name, ())]

    def verdict(self, path: str, qualname: str, libraries: bool = True) -> Verdict:
        """``libraries=False``: only the project's own tracing counts, not its users' (for a
        definition its authors made eager on purpose)."""
        key = (os.path.abspath(path), qualname, libraries)
        found = self._verdicts.get(key)
        if found is None:
            found = self._verdicts[key] = _search(self.project_of(path), key[0], qualname, libraries)
        return found


def _public(qualname: str) -> bool:
    return "<locals>" not in qualname and not any(
        p.startswith("_") and not (p.startswith("__") and p.endswith("__")) for p in qualname.split("."))


def _search(project: Project, path: str, qualname: str,  # noqa: C901 (one walk, its cases)
            libraries: bool) -> Verdict:
    """``libraries``: a public function of an installable package counts as traced (its users may
    trace it); without, only the project's own tracing does."""
    queue = deque([_Node(path, qualname, 0)])
    seen = {(path, qualname)}
    eager: list[str] = []
    while queue and len(seen) <= MAX_NODES:
        node = queue.popleft()
        scan = project.scan(node.path)
        rel = project.relative(node.path)
        if scan.runs_eagerly:
            eager.append(f"{rel} calls tf.config.run_functions_eagerly(True)")
            continue
        owner_class = _class_of(scan, node.qualname)
        if owner_class in scan.eager_classes:
            eager.append(f"{owner_class} calls tf.config.run_functions_eagerly(True) before its methods run")
            continue
        info = scan.function(node.qualname)
        if info is not None and info.root is not None:
            return Verdict(True, f"reached from {info.root} `{node.qualname}` at {rel}:{info.line}")
        package = project.library_package(node.path)
        if (libraries and package is not None and _public(node.qualname) and not scan.has_main
                and project.traces_anywhere()):
            return Verdict(True, f"`{node.qualname}` is public in the package `{package}`, which its users "
                                 f"may call under tf.function", by_library=True)
        if node.depth >= MAX_DEPTH:
            continue
        owner, sep, _ = node.qualname.rpartition(".<locals>.")
        if sep:  # a nested definition runs when the function around it does
            if (node.path, owner) not in seen:
                seen.add((node.path, owner))
                queue.append(_Node(node.path, owner, node.depth + 1))
            continue
        name = node.qualname.rsplit(".", 1)[-1]
        private = name.startswith("_") and not name.endswith("__")
        for where in ([node.path] if private else project.mentioning(name)):
            refs = project.scan(where).references.get(name, ())
            for ref in refs:
                at = f"{project.relative(where)}:{ref.line}"
                if ref.how == "traced":
                    return Verdict(True, f"`{name}` is passed to a tracing call at {at}")
                if ref.how == "eager":
                    eager.append(f"run through tf.py_function at {at}")
                elif ref.owner is None:
                    eager.append(f"called at the top level of {at}" if ref.how == "toplevel"
                                 else f"called from __main__ at {at}")
                elif ref.owner != node.qualname and (where, ref.owner) not in seen:
                    seen.add((where, ref.owner))
                    queue.append(_Node(where, ref.owner, node.depth + 1))
    if eager:
        return Verdict(False, "it runs only eagerly: " + "; ".join(dict.fromkeys(eager[:3])))
    if project.truncated:
        return Verdict(False, f"the project at {project.root} is too large to follow")
    return Verdict(False, "nothing in the project calls it under tf.function")



def _class_of(scan: ModuleScan, qualname: str) -> str | None:
    """The class whose method (or a function nested in one) ``qualname`` is."""
    top = qualname.split(".<locals>.", 1)[0]
    info = scan.function(top)
    return info.class_name if info is not None else None

"""The import graph of cg_lint and runtime_check: no circle, and each layer imports only below it.

Imports are read statically with ``ast``, deferred ones (inside functions, under TYPE_CHECKING)
included: a circle hidden behind a late import is still a circle for the reader.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("cg_lint", "runtime_check")

# Bottom to top. A module belongs to the first layer with a matching prefix (longest wins).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("vocabulary", ("cg_lint", "cg_lint.codes", "cg_lint.findings", "cg_lint.config", "cg_lint.sources",
                    "cg_lint.noqa")),
    ("prefilter", ("cg_lint.prefilter",)),
    ("syntax", ("cg_lint.syntax",)),
    ("project", ("cg_lint.project",)),
    ("model", ("cg_lint.model",)),
    ("analyses", ("cg_lint.analyses",)),
    ("rules", ("cg_lint.rules",)),
    ("engine", ("cg_lint.engine", "cg_lint.answering")),
    ("frontends", ("cg_lint.cli", "cg_lint.runner", "cg_lint.fixes", "cg_lint.api",
                   "cg_lint.flake8_plugin", "cg_lint.formatters", "cg_lint.docs", "cg_lint.server",
                   "cg_lint.helper", "cg_lint.__main__")),
    ("runtime_check", ("runtime_check",)),
)


def modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    out = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports anywhere in its text; ``from pkg import sub`` names the
    submodule when ``sub`` is one."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # `import a.b.c` of a non-module attribute path
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def graph(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    known = modules(root, packages)
    return {name: imports(name, path, known) for name, path in known.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def layer_of(module: str) -> int:
    best, rank = -1, -1
    for number, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), number
    return rank


def test_no_import_circle() -> None:
    assert circles(graph()) == []


def test_every_module_has_a_layer() -> None:
    assert [m for m in graph() if layer_of(m) < 0] == []


def test_layers_import_only_downwards() -> None:
    upward = [
        f"{module} ({LAYERS[layer_of(module)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
        for module, targets in graph().items() for target in sorted(targets)
        if layer_of(target) > layer_of(module)
    ]
    assert upward == []


def test_no_two_modules_share_a_name() -> None:
    names: dict[str, list[str]] = {}
    for module, path in modules(ROOT, ("cg_lint",)).items():
        if path.stem not in ("__init__", "__main__"):
            names.setdefault(path.stem, []).append(module)
    assert {k: v for k, v in names.items() if len(v) > 1} == {}


def test_the_checks_see_a_deferred_circle(tmp_path: Path) -> None:
    """The same checks on a small package whose circle hides behind a function-level import."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.sub import b\n")
    (package / "sub" / "b.py").write_text("def f():\n    from ..a import thing\n")
    (package / "c.py").write_text("from pkg import a\n")
    edges = graph(tmp_path, ("pkg",))
    assert edges["pkg.a"] == {"pkg.sub.b"} and edges["pkg.sub.b"] == {"pkg.a"} and edges["pkg.c"] == {"pkg.a"}
    assert circles(edges) == [["pkg.a", "pkg.sub.b"]]

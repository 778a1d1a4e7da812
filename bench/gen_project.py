"""A generated project of many modules around one file with graph-mode findings: what the flake8
plugin's project-wide trace decision reads (cg_lint/project, docs/trace-context.md).

    python bench/gen_project.py FOLDER [MODULES]

``ops.py`` holds a custom gradient whose ``grad`` branches on a tensor (CG009: a failure only under
``tf.function``); ``train.py`` calls it from a ``tf.function``, so the finding is reported; the
other modules are ordinary code in packages, some of which mention ``clip`` (the search reads
every module that names it).
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

OPS = textwrap.dedent('''\
    import tensorflow as tf


    @tf.custom_gradient
    def clip(x):
        y = tf.clip_by_value(x, -1.0, 1.0)

        def grad(dy):
            if tf.reduce_all(tf.abs(x) < 1.0):
                return dy
            return dy * 0.5

        return y, grad
''')

TRAIN = textwrap.dedent('''\
    import tensorflow as tf

    from ops import clip


    @tf.function
    def step(x):
        return clip(x)
''')


def _module(i: int) -> str:
    lines = [f'"""Generated module {i}."""', "", "import math", ""]
    if i % 10 == 0:  # some modules name the custom gradient (eagerly): the search reads them
        lines += ["from ops import clip", "", "", f"def use_{i}(x):", "    return clip(x)", ""]
    for j in range(12):
        lines += ["", f"def helper_{i}_{j}(a, b=1.0):", f'    """Helper {j} of module {i}."""',
                  "    total = 0.0", "    for k in range(3):", "        total += math.sqrt(abs(a) + k * b)",
                  "    return total", ""]
    return "\n".join(lines) + "\n"


def generate(folder: Path, modules: int = 150) -> Path:
    """The project in ``folder`` (a ``.git`` marks its root); returns the path of ``ops.py``."""
    (folder / ".git").mkdir(parents=True, exist_ok=True)
    (folder / "ops.py").write_text(OPS)
    (folder / "train.py").write_text(TRAIN)
    for i in range(modules - 2):
        package = folder / f"pkg{i // 25}"
        package.mkdir(exist_ok=True)
        (package / "__init__.py").touch()
        (package / f"mod_{i}.py").write_text(_module(i))
    return folder / "ops.py"


if __name__ == "__main__":
    generate(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 150)

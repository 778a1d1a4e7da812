"""Run rule doc examples with TensorFlow, eagerly and under tf.function; print the outcomes as JSON.

Used by test_rules_tf.py in one subprocess, so TensorFlow is imported once and never in the
linter's own test process. Each scenario takes a rule's ``## Example`` (or ``## Use instead``) code
from its docstring, so the docs are what gets proven.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

from cg_lint.rules import RULES_BY_CODE  # noqa: E402
from tf_outcome import outcome  # noqa: E402

_FENCE = re.compile(r"## (?P<section>Example|Use instead)\n+```python\n(?P<code>.*?)```", re.S)


_MODULES = tempfile.mkdtemp(prefix="cg_examples_")
sys.path.insert(0, _MODULES)


def load(code: str, section: str = "Example") -> dict:
    """Import the example as a real module: AutoGraph treats code without a source file differently."""
    blocks = {m["section"]: m["code"] for m in _FENCE.finditer(RULES_BY_CODE[code].doc())}
    name = f"{code.lower()}_{section.replace(' ', '_').lower()}"
    with open(os.path.join(_MODULES, f"{name}.py"), "w") as fh:
        fh.write("import numpy as np\nimport tensorflow as tf\n" + blocks[section])
    return vars(importlib.import_module(name))


def gradient_of(fn, *args):
    """d sum(fn(*args)) / d args (and the variables the example defines, if any)."""
    def run():
        with tf.GradientTape() as tape:
            for a in args:
                tape.watch(a)
            y = fn(*args)
        return tape.gradient(y, list(args))
    return run


def both(thunk) -> dict[str, str]:
    return {"eager": outcome(thunk), "graph": outcome(tf.function(thunk))}


def main() -> None:
    x = tf.constant(3.0)
    v = tf.constant([1.0, -2.0, 3.0])
    results: dict[str, dict[str, str]] = {}

    ns = load("CG009")
    results["CG009"] = both(gradient_of(ns["clip_grad"], tf.constant([3.0, 4.0])))

    ns = load("CG010")
    results["CG010"] = both(gradient_of(ns["soft_sign"], v))
    ns = load("CG010", "Use instead")
    results["CG010-use-instead"] = both(gradient_of(ns["soft_sign"], v))

    ns = load("CG011")
    m = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    results["CG011"] = both(lambda: ns["safe_log"](m))

    ns = load("CG012")
    results["CG012"] = both(lambda: ns["noisy"](x, True))

    ns = load("CG004")
    results["CG004"] = both(lambda: ns["scale"](x))

    ns = load("CG005")
    results["CG005"] = both(gradient_of(ns["scale"], x))

    ns = load("CG006")
    results["CG006"] = both(gradient_of(ns["scale"], x))

    # CG007: the true gradients of x*w + b at x=3 are d/dw = 3, d/db = 1
    # (closures, not default arguments: AutoGraph converts the undecorated function when a custom
    # gradient is called through a parameter)
    def variable_gradients(ns):
        def run():
            with tf.GradientTape() as tape:
                y = ns["affine"](x)
            return tape.gradient(y, [ns["w"], ns["b"]])
        return run

    for section in ("Example", "Use instead"):
        var_grads = variable_gradients(load("CG007", section))

        key = "CG007" if section == "Example" else "CG007-use-instead"
        # eager order comes from a set: run a few times to see it move
        results[key] = {"eager": [outcome(var_grads) for _ in range(3)], "graph": outcome(tf.function(var_grads))}

    ns = load("CG008")
    scaled = ns["scaled"]
    results["CG008"] = both(lambda: scaled(x, scale=3.0))
    s = tf.constant(3.0)

    def kw_gradient():
        with tf.GradientTape() as tape:
            tape.watch(x)
            tape.watch(s)
            y = scaled(x, scale=s)
        return tape.gradient(y, [x, s])

    results["CG008-eager-keyword-tensor"] = {"eager": outcome(kw_gradient)}

    # CG018: the documented failure needs the call inside tf.cond under tf.function
    def in_cond(ns):
        def run():
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = tf.cond(tf.constant(True), lambda: ns["scale"](x), lambda: x)
            return tape.gradient(y, [x, ns["w"]])
        return run

    for section in ("Example", "Use instead"):
        results["CG018" if section == "Example" else "CG018-use-instead"] = both(in_cond(load("CG018", section)))

    json.dump(results, sys.stdout, indent=1)


if __name__ == "__main__":
    main()

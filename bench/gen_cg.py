"""A generated module full of custom gradients (what a heavy user's ops file looks like).

    python bench/gen_cg.py [LINES] > ops.py
"""

from __future__ import annotations

import random
import sys

HEADER = '''"""Generated: custom-gradient ops in the styles real code uses."""

import functools

import tensorflow as tf
from tensorflow import custom_gradient as cg

EPS = 1e-6
'''


def _function(i: int, rnd: random.Random) -> list[str]:
    k = rnd.choice([1, 2, 3])
    xs = [f"x{j}" for j in range(k)]
    args, total = ", ".join(xs), " + ".join(xs)
    deco = rnd.choice(["@tf.custom_gradient", "@cg", "@tf.compat.v1.custom_gradient"])
    return ["", "", deco, f"def op_{i}({args}):", f'    """Op {i}: a smooth function of {k} input(s)."""',
            f"    y = tf.math.log1p(tf.exp({total}))", "", "    def grad(dy):",
            f"        s = tf.sigmoid({total})", f"        return {', '.join(['dy * s'] * k)}", "",
            "    return y, grad", "", "",
            f"def use_{i}(a):", f"    return op_{i}({', '.join(['a'] * k)}) * EPS"]


def _call_form(i: int, rnd: random.Random) -> list[str]:
    return ["", "", f"def _fwd_{i}(x):", "    def grad(dy):", "        return dy * 2.0", "",
            "    return x * 2.0, grad", "", "", f"double_{i} = tf.custom_gradient(_fwd_{i})",
            f"halve_{i} = functools.partial(tf.multiply, 0.5)", f"later_{i} = double_{i}(EPS)"]


def _layer(i: int, rnd: random.Random) -> list[str]:
    return ["", "", f"class Scale{i}(tf.Module):", "    def __init__(self):", "        super().__init__()",
            "        self.w = tf.Variable(1.0)", "", "    @tf.custom_gradient", "    def __call__(self, x):",
            "        y = x * self.w", "", "        def grad(dy, variables=None):",
            "            return dy * self.w, [tf.reduce_sum(dy * x)]", "", "        return y, grad", "",
            "    def apply(self, x):", "        return self(x) + self(x * 2.0)"]


def generate(n_lines: int = 2000, seed: int = 0) -> str:
    rnd = random.Random(seed)
    out = HEADER.splitlines()
    i = 0
    while len(out) < n_lines - 20:
        i += 1
        make = rnd.choices([_function, _call_form, _layer], weights=[6, 2, 1])[0]
        out += make(i, rnd)
    out += [""] * (n_lines - len(out))
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(generate(int(sys.argv[1]) if len(sys.argv) > 1 else 2000))

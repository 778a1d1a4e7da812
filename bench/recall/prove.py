"""Run every recall case on TensorFlow, eagerly and under tf.function; record what happens.

    python bench/recall/prove.py            # writes bench/recall/proof.txt
    python bench/recall/prove.py --check    # exits 1 when a case no longer fails as recorded

Each case in ``cases/`` defines ``run_case()``, which takes a gradient (or builds the model)
through the buggy code and returns the result, ``graph_check()``, which does the same under
``tf.function`` (with an unknown batch where Keras would trace one), and ``TRUTH`` when the bug
gives a wrong value instead of an error. A case is proven when, in at least one mode, it raises or
its value differs from ``TRUTH``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
PROOF = HERE / "proof.txt"
_ADDRESS = re.compile(r"0x[0-9a-f]+")


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"recall_{path.stem}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rounded(value: object) -> object:
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, (list, tuple)):
        return [rounded(v) for v in value]
    return value


def outcome(fn: Callable[[], object]) -> tuple[bool, str]:
    """(ran, text): text is the value, or the exception's type and its last line."""
    try:
        value = fn()
    except Exception as error:  # noqa: BLE001 - the exception is what we record
        lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
        last = _ADDRESS.sub("0x...", lines[-1]) if lines else ""  # object addresses change per run
        return False, f"RAISES {type(error).__name__}: {last[:160]}"
    if hasattr(value, "numpy"):
        value = value.numpy()
    if hasattr(value, "tolist"):
        value = value.tolist()
    return True, f"OK {rounded(value)}"


def prove(path: Path) -> list[str]:
    import tensorflow as tf

    module = load(path)
    truth = getattr(module, "TRUTH", None)
    graph = getattr(module, "graph_check", None) or tf.function(module.run_case)
    lines, failed = [], False
    for mode, fn in (("eager", module.run_case), ("tf.function", graph)):
        ran, text = outcome(fn)
        wrong = ran and truth is not None and text != f"OK {rounded(truth)}"
        failed |= not ran or wrong
        lines.append(f"{path.stem} {mode + ':':13} {text}{'  (WRONG: truth ' + str(truth) + ')' if wrong else ''}")
    lines.append(f"{path.stem} verdict:      {'FAILS' if failed else 'NO FAILURE'}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with proof.txt instead of writing it")
    parser.add_argument("cases", nargs="*", help="case names (default: every case)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(CASES))
    paths = sorted(CASES.glob("*.py"))
    if args.cases:
        paths = [p for p in paths if p.stem in args.cases]
    out = [line for path in paths for line in prove(path)]
    text = "\n".join(out) + "\n"
    if args.cases:
        print(text, end="")
        return 0
    if args.check:
        same = PROOF.read_text() == text
        print("proof.txt is current" if same else "proof.txt differs from this run", file=sys.stderr)
        return 0 if same else 1
    PROOF.write_text(text)
    print(text, end="")
    unproven = [line for line in out if line.endswith("NO FAILURE")]
    return 1 if unproven else 0


if __name__ == "__main__":
    sys.exit(main())

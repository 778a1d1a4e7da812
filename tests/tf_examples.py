"""The rule examples and bundled examples that carry a ``# tf:`` line (see tf_examples_driver.py).

Free of TensorFlow: test_examples_tf.py reads the list in the test process, where TensorFlow is
never imported (the lint tests run without it); only the driver's subprocess imports it.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from cg_lint.rules import ALL_RULES

TF_LINE = re.compile(r"^\s*#\s*tf:\s*(?P<call>.+?)\s*=>\s*(?P<expect>.+?)\s*$", re.M)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def examples():
    """(id, source, call, expectation) for every rule example with a ``# tf:`` line, and for each
    such line in the bundled examples (examples/*.py: their findings are real bugs)."""
    for rule in ALL_RULES:
        for kind in ("VALID", "INVALID"):
            for i, source in enumerate(getattr(rule, kind)):
                source = textwrap.dedent(source)
                for j, match in enumerate(TF_LINE.finditer(source)):
                    yield f"{rule.code}-{kind.lower()}-{i}-{j}", source, match["call"], match["expect"]
    for path in sorted(EXAMPLES.glob("*.py")):
        source = path.read_text(encoding="utf-8")
        for j, match in enumerate(TF_LINE.finditer(source)):
            yield f"examples/{path.name}-invalid-{j}", source, match["call"], match["expect"]

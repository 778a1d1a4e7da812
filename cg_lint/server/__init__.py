"""``cg-lint server``: a Language Server over stdio (pygls 2, an optional extra).

Importing this package costs nothing; pygls and the server are imported by ``main``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

MISSING = (
    "cg-lint: error: 'cg-lint server' needs pygls>=2 and lsprotocol (the 'server' extra): "
    "pip install 'pygls>=2' lsprotocol"
)


def main(argv: Sequence[str] = ()) -> int:
    parser = argparse.ArgumentParser(
        prog="cg-lint server",
        description="A Language Server for cg-lint over stdio: diagnostics, fixes, rule pages.",
    )
    parser.add_argument(
        "--stdio", action="store_true", help="talk over stdin/stdout (the default and only way)"
    )
    args, unknown = parser.parse_known_args(list(argv))
    if unknown:
        print(
            f"cg-lint server: error: unrecognized arguments: {' '.join(unknown)}", file=sys.stderr
        )
        return 2
    try:
        from lsprotocol import types  # noqa: F401
        from pygls.lsp.server import LanguageServer  # noqa: F401  (pygls 1.x has no pygls.lsp.server)
    except ImportError:
        print(MISSING, file=sys.stderr)
        return 2
    from cg_lint.server.app import create_server
    from cg_lint.server.framing import BoundedReader

    server = create_server()
    try:
        server.start_io(stdin=BoundedReader(sys.stdin.buffer))  # type: ignore[arg-type]
    finally:
        server.linter.shutdown(wait=False, cancel_futures=True)
    # the protocol's rule: exit after shutdown is 0, an exit (or a lost client) without it is 1
    return 0 if getattr(server.protocol, "_shutdown", False) else 1

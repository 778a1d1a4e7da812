"""The flake8 plugin's warm helper: one background process per user and cg-lint version that lints
for the fresh flake8 processes editors start on every save (as eslint_d, blackd and dmypy do), so
that such a process never imports libcst nor parses.

- ``place``: who the helper is (the identity of the code) and where it listens (a private folder);
- ``wire``: the messages, length-prefixed JSON, and the settings they carry;
- ``client``: what a flake8 process does (ask, start, fall back), and ``cg-lint helper status|stop``;
- ``daemon``: the helper process itself (``python -m cg_lint.helper.daemon``).

Linux only (``SO_PEERCRED``); elsewhere, and on any failure, the plugin lints in its own process.
"""

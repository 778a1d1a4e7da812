"""``python -m runtime_check``: the runtime-check command."""

import sys

from .cli import main

sys.exit(main())

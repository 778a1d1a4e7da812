import sys

from cg_lint.cli import main

sys.exit(main())

"""``python -m harness`` is ``sealcheck``."""

import sys

from harness.cli import main

sys.exit(main())

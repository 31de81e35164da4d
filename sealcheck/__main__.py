"""``python -m sealcheck`` is ``sealcheck``."""

import sys

from sealcheck.harness.cli.app import main

sys.exit(main())

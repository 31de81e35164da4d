"""``python -m pipeline``: same as ``sealcheck pipeline``."""

import sys

from pipeline.cli import main

sys.exit(main())

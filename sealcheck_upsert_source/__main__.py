"""``python -m sealcheck_upsert_source``: same as ``sealcheck pipeline``."""

import sys

from sealcheck_upsert_source.cli import main

sys.exit(main())

"""``python -m sealcheck_upsert_source``: same as ``sealcheck upsert-source``."""

import sys

from sealcheck_upsert_source.cli import main

sys.exit(main())

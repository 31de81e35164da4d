"""``python -m sealcheck_delta_streaming``: run one incarnation of the job."""

from sealcheck_delta_streaming.cli import main

raise SystemExit(main())

"""``python -m delta_job``: run one incarnation of the job."""

from delta_job.cli import main

raise SystemExit(main())

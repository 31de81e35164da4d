"""``python -m orders_job``: run the job (see :mod:`orders_job.job`)."""

import sys

from orders_job.job import main

sys.exit(main())

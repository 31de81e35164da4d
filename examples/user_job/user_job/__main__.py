"""``python -m user_job``: run the job (see :mod:`user_job.job`)."""

import sys

from user_job.job import main

sys.exit(main())

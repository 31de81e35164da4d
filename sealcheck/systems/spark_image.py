"""Where Spark is inside the images of the systems under test: each image is built on the
base image with a virtualenv at ``/opt/venv`` holding PySpark (its own image module says how),
so a run's Spark standalone cluster and Spark Connect server start the distribution's scripts
from there, whatever the system. The one path every image and its users share."""

from __future__ import annotations

#: PySpark's distribution in an image's virtualenv (its ``bin/`` has ``spark-submit`` and
#: ``spark-class``)
PYSPARK_IN_IMAGE = "/opt/venv/lib/python3.11/site-packages/pyspark"
#: PySpark's spark-submit in an image (runs the Spark Connect server)
SPARK_SUBMIT_IN_IMAGE = f"{PYSPARK_IN_IMAGE}/bin/spark-submit"
#: the script that starts a standalone master or worker in an image
SPARK_CLASS_IN_IMAGE = f"{PYSPARK_IN_IMAGE}/bin/spark-class"

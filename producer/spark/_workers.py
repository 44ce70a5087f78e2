"""Which Python interpreter Spark's Python workers run.

PySpark starts its workers with ``PYSPARK_PYTHON``, or else whatever ``python3`` is first
on ``PATH``: for a driver run as ``.venv/bin/python`` without the virtual environment
activated, that is the system interpreter, which cannot import this SDK (the task fails
with ``No module named 'producer'``). In local mode the workers run on the driver's
machine, so the driver's own interpreter is the one that has everything the job needs.
On a real cluster the executors' interpreter is the cluster's business: it is left alone.
"""

from __future__ import annotations

import os
import sys

from pyspark import SparkContext

_SPARK_DEFAULT_WORKER = "python3"  # SparkContext.pythonExec without PYSPARK_PYTHON


def use_driver_python_in_local_mode(context: SparkContext) -> None:
    """Point a local-mode context's workers at ``sys.executable`` unless the user chose one."""
    if not (context.master or "").startswith("local"):
        return
    if "PYSPARK_PYTHON" in os.environ or context.getConf().get("spark.pyspark.python"):
        return
    if context.pythonExec == _SPARK_DEFAULT_WORKER:
        context.pythonExec = sys.executable

"""A local-mode job run as the README runs it: no ``PYSPARK_PYTHON``, and a ``python3`` on
``PATH`` that is not the driver's interpreter (a virtual environment used without being
activated). The workers must run the driver's interpreter (``producer/spark/_workers.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

JOB = textwrap.dedent(
    """
    from pyspark.sql import SparkSession
    from producer.spark import publish
    from producer.testing import DevClusterThread

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    with DevClusterThread(brokers=1, topics={"Rows": 2}) as cluster:
        df = spark.range(20, numPartitions=2).selectExpr("CAST(id AS STRING) AS body")
        results = publish(df, namesrv=cluster.namesrv_addr, group="g", topic="Rows",
                          body_col="body")
        print("stored", results.where("status = 'SEND_OK'").count(),
              cluster.message_count("Rows"))
    spark.stop()
    """
)


@pytest.mark.timeout(180)
def test_local_workers_run_the_drivers_interpreter(tmp_path: Path) -> None:
    wrong = tmp_path / "bin" / "python3"
    wrong.parent.mkdir()
    wrong.write_text("#!/bin/sh\necho 'not the driver interpreter' >&2\nexit 3\n")
    wrong.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env["PATH"] = f"{wrong.parent}{os.pathsep}{env.get('PATH', '')}"
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    done = subprocess.run(
        [sys.executable, "-c", JOB],
        env=env,
        capture_output=True,
        text=True,
        timeout=170,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["stored", "20", "20"]

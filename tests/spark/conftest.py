"""Spark in ``local[2]`` on loopback, one session for the whole directory, publishing to
the embedded dev cluster (on a thread of this process; the Python workers reach it over
TCP like any executor would)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.sql import SparkSession

from producer.testing import DevClusterThread

TOPIC = "Rows"
SPARK_ENV = {
    "PYSPARK_PYTHON": sys.executable,  # the workers must import this environment's SDK
    "PYSPARK_DRIVER_PYTHON": sys.executable,
    "SPARK_LOCAL_IP": "127.0.0.1",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test of the shared session runs on one worker (``--dist loadgroup``): one JVM
    for the whole run, however many workers pytest-xdist starts."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("spark"))


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    saved = {name: os.environ.get(name) for name in SPARK_ENV}
    os.environ.update(SPARK_ENV)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("rocketmq-producer-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture
def cluster() -> Iterator[DevClusterThread]:
    with DevClusterThread(brokers=3, topics={TOPIC: 4, "Other": 2}, seed=0) as c:
        yield c


def options(cluster: DevClusterThread, **more: Any) -> dict[str, Any]:
    """publish's arguments for the test cluster's topic."""
    return {"namesrv": cluster.namesrv_addr, "group": "spark-test", "topic": TOPIC, **more}

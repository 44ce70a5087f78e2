"""examples/spark_pipeline.py end to end: orders in, totals per customer out, the latency
report of the write, in the directory's shared ``local[2]`` session."""

from __future__ import annotations

import re

from pyspark.sql import SparkSession

from examples.spark_pipeline import ORDERS, TOTALS, run, verdict
from producer.testing import DevClusterThread


def test_the_pipeline_totals_every_order_once(spark: SparkSession) -> None:
    with DevClusterThread(brokers=2, topics={ORDERS: 4, TOTALS: 4}) as cluster:
        outcome = run(spark, cluster.namesrv_addr, 140)
    totals = {t["customer"]: t for t in outcome["totals"]}  # type: ignore[attr-defined]
    assert sorted(totals) == [str(c) for c in range(7)]
    for customer, row in totals.items():
        ids = [i for i in range(140) if i % 7 == int(customer)]
        assert (row["orders"], row["total"]) == (len(ids), sum(i % 100 + 1 for i in ids))
    assert outcome["latency"]["rows"] == 7  # type: ignore[index]
    ok, line = verdict(outcome, 140)  # the script's last line: a verdict, figures rounded
    assert ok and line.startswith("OK: 140 of 140 orders totalled once, for 7 customers;"), line
    assert re.fullmatch(r".*p50 \d+\.\d ms, p99 \d+\.\d ms", line), line
    assert not verdict({**outcome, "totals": outcome["totals"][:-1]}, 140)[0]  # type: ignore[index]

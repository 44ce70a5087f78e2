"""``latency_report`` on Spark and its rendering: figures checked against a results frame
whose answers are known."""

from __future__ import annotations

import io
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from rich.console import Console

from producer.spark import latency_report, publish, render_report
from producer.spark._publish import RESULT_DDL
from producer.testing import DevClusterThread
from tests.spark.conftest import TOPIC, options

pytestmark = pytest.mark.timeout(120)
MINUTE_MS = 60_000
T0 = 1_790_000_000_000  # a whole minute, in ms


def result(row_id: int, broker: str, latency: float, at_ms: int, **more: Any) -> dict[str, Any]:
    ok = more.get("fate") is None
    history = [
        {
            "broker": broker,
            "queue_id": 0,
            "outcome": "ok" if ok else "timeout",
            "code": None,
            "latency_ms": latency,
        }
    ]
    for failed_on in more.pop("failed_on", ()):
        history.insert(
            0,
            {
                "broker": failed_on,
                "queue_id": 1,
                "outcome": "broker_error",
                "code": 14,
                "latency_ms": 1.0,
            },
        )
    return {
        "row_id": str(row_id),
        "partition": 0,
        "topic": more.get("topic", "T"),
        "msg_id": f"id{row_id}",
        "status": "SEND_OK" if ok else "FAILED",
        "broker": broker,
        "queue_id": 0,
        "queue_offset": row_id if ok else None,
        "attempts": len(history),
        "latency_ms": latency,
        "error_type": None if ok else "SendTimeout",
        "error_code": None,
        "error_message": None if ok else "late",
        "fate": more.get("fate"),
        "sent_at_ms": at_ms,
        "attempt_history": history,
    }


def frame(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    from pyspark.sql import functions as sf

    df = spark.createDataFrame(rows, RESULT_DDL)
    return df.withColumn("sent_at", sf.timestamp_millis("sent_at_ms")).drop("sent_at_ms")


@pytest.fixture
def known(spark: SparkSession) -> DataFrame:
    rows = [result(i, "broker-a", float(i + 1), T0 + i) for i in range(100)]  # 1..100 ms
    rows += [
        result(100 + i, "broker-b", 500.0, T0 + MINUTE_MS + i, failed_on=["broker-c"])
        for i in range(10)
    ]
    rows += [result(200, "broker-c", 900.0, T0 + MINUTE_MS, fate="unknown", topic="U")]
    return frame(spark, rows)


def test_report_figures_match_the_rows(known: DataFrame) -> None:
    report = latency_report(known)
    overall = report.overall.first()
    assert (overall.rows, overall.succeeded, overall.unknown, overall.not_stored) == (
        111,
        110,
        1,
        0,
    )
    assert overall.success_rate == pytest.approx(110 / 111)
    assert overall.retries == 10
    assert overall.max_ms == 500.0  # the failed 900 ms row is not a latency of a success
    per_broker = {r.broker: r for r in report.per_broker.collect()}
    a = per_broker["broker-a"]
    assert (a.p50_ms, a.p90_ms, a.p99_ms, a.max_ms) == (50.0, 90.0, 99.0, 100.0)
    assert per_broker["broker-b"].retries == 10
    assert {r.topic: r.rows for r in report.per_topic.collect()} == {"T": 110, "U": 1}
    minutes = {(r.bucket_start.minute, r.broker): r.rows for r in report.over_time.collect()}
    first = datetime.fromtimestamp(T0 / 1000, tz=timezone.utc).minute
    assert minutes[(first, "broker-a")] == 100 and minutes[((first + 1) % 60, "broker-b")] == 10
    assert {(r.attempts, r.succeeded): r.rows for r in report.attempts.collect()} == {
        (1, True): 100,
        (2, True): 10,
        (1, False): 1,
    }
    attempts = {r.broker: r for r in report.broker_attempts.collect()}
    assert attempts["broker-c"].failed == 11 and attempts["broker-c"].failure_codes == [14]
    assert attempts["broker-a"].failed == 0 and attempts["broker-a"].attempts == 100
    assert {r.fate: r.rows for r in report.fates.collect()} == {"stored": 110, "unknown": 1}


def test_render_prints_every_table_and_plots_the_brokers(known: DataFrame, tmp_path: Path) -> None:
    out = io.StringIO()
    png = tmp_path / "latency.png"
    render_report(
        latency_report(known, bucket="30 seconds"), console=Console(file=out, width=200), png=png
    )
    text = out.getvalue()
    for title in ("overall", "per broker", "per topic", "broker attempts", "attempts", "fates"):
        assert title in text
    assert "broker-b" in text and "99.0" in text
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_a_real_run_reports_on_its_brokers(spark: SparkSession, cluster: DevClusterThread) -> None:
    df = spark.range(300, numPartitions=2).selectExpr("id", "CAST(id AS STRING) AS body")
    report = latency_report(publish(df, body_col="body", id_col="id", **options(cluster)))
    assert report.overall.first().rows == 300 and report.overall.first().success_rate == 1.0
    # Which brokers get rows depends on batching and routing; the report must say what
    # each really stored.
    stored = {b: cluster.message_count(TOPIC, broker=b) for b in cluster.broker_names}
    assert {r.broker: r.rows for r in report.per_broker.collect()} == {
        b: n for b, n in stored.items() if n
    }


@pytest.mark.parametrize("terminal", [False, True], ids=["piped", "narrow-terminal"])
def test_render_never_cuts_a_cell(known: DataFrame, terminal: bool) -> None:
    out = io.StringIO()
    console = Console(file=out, width=60, force_terminal=terminal, color_system=None)
    render_report(latency_report(known, bucket="30 seconds"), console=console)
    text = out.getvalue()
    assert "…" not in text
    for broker in ("broker-a", "broker-b", "broker-c"):
        assert broker in text
    if not terminal:  # piped output has no screen edge: headers and figures stay whole
        assert "failure_codes" in text and "success_rate" in text

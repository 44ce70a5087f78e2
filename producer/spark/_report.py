"""Send latency and outcomes across a publish run, computed on Spark from its results."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf

from producer.spark._rows import FAILED

PERCENTILES = (0.5, 0.9, 0.99)
ACCURACY = 10_000  # percentile_approx's: relative error about 1/ACCURACY


@dataclass(frozen=True)
class LatencyReport:
    """DataFrames (small: one row per group) over a ``publish`` results DataFrame.

    Latency percentiles are over successful sends (whole send, retries included); the
    success rate, retries and fate counts over every row. A row's broker is the one its
    last attempt went to.
    """

    overall: DataFrame
    per_broker: DataFrame
    per_topic: DataFrame
    over_time: DataFrame  # per time bucket of send start and broker
    attempts: DataFrame  # the retry distribution: rows per number of attempts and outcome
    broker_attempts: DataFrame  # every attempt (retries too) per broker: where failures happen
    fates: DataFrame


def latency_report(results: DataFrame, *, bucket: str = "1 minute") -> LatencyReport:
    """Aggregate ``publish`` results; ``bucket`` is a Spark interval such as "10 seconds"."""
    rows = results.withColumn("succeeded", sf.col("status") != sf.lit(FAILED))
    window = sf.window("sent_at", bucket)
    return LatencyReport(
        overall=rows.agg(*_summary()),
        per_broker=rows.groupBy("broker").agg(*_summary()).orderBy("broker"),
        per_topic=rows.groupBy("topic").agg(*_summary()).orderBy("topic"),
        over_time=rows.groupBy(window.start.alias("bucket_start"), "broker")
        .agg(*_summary())
        .orderBy("bucket_start", "broker"),
        attempts=rows.groupBy("attempts", "succeeded")
        .agg(sf.count(sf.lit(1)).alias("rows"))
        .orderBy("attempts", sf.desc("succeeded")),
        broker_attempts=_broker_attempts(results),
        fates=rows.groupBy(sf.coalesce("fate", sf.lit("stored")).alias("fate"))
        .agg(sf.count(sf.lit(1)).alias("rows"))
        .orderBy("fate"),
    )


def _summary() -> list[Column]:
    ok_latency = sf.when(sf.col("succeeded"), sf.col("latency_ms"))
    quantiles = sf.percentile_approx(ok_latency, list(PERCENTILES), ACCURACY)
    return [
        sf.count(sf.lit(1)).alias("rows"),
        sf.sum(sf.col("succeeded").cast("long")).alias("succeeded"),
        sf.avg(sf.col("succeeded").cast("double")).alias("success_rate"),
        *(quantiles[i].alias(_name(q)) for i, q in enumerate(PERCENTILES)),
        sf.max(ok_latency).alias("max_ms"),
        sf.sum(sf.greatest(sf.col("attempts") - 1, sf.lit(0))).alias("retries"),
        sf.sum((sf.col("fate") == "not_stored").cast("long")).alias("not_stored"),
        sf.sum((sf.col("fate") == "unknown").cast("long")).alias("unknown"),
    ]


def _broker_attempts(results: DataFrame) -> DataFrame:
    attempt = sf.explode("attempt_history").alias("a")
    each = results.select(attempt).select("a.*")
    failed = sf.col("outcome") != sf.lit("ok")
    quantiles = sf.percentile_approx("latency_ms", [0.5, 0.99], ACCURACY)
    return (
        each.groupBy("broker")
        .agg(
            sf.count(sf.lit(1)).alias("attempts"),
            sf.sum(failed.cast("long")).alias("failed"),
            sf.avg(failed.cast("double")).alias("failure_rate"),
            quantiles[0].alias("p50_ms"),
            quantiles[1].alias("p99_ms"),
            sf.array_sort(sf.collect_set(sf.when(failed, sf.col("code")))).alias("failure_codes"),
        )
        .orderBy("broker")
    )


def _name(q: float) -> str:
    return f"p{round(q * 100)}_ms"

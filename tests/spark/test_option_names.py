"""A misspelt source or sink option is refused with the nearest name, as producer options
are (issue 34: ``startingOffset`` was ignored in silence and the read began elsewhere)."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from producer.errors import InvalidOptionError
from producer.spark import register
from producer.spark._read_options import read_options
from producer.testing import DevClusterThread
from tests.spark.conftest import TOPIC


def test_a_misspelt_read_option_is_refused_in_spark(
    spark: SparkSession, cluster: DevClusterThread
) -> None:
    register(spark)
    read = spark.read.format("rocketmq").option("namesrv", cluster.namesrv_addr)
    read = read.option("topic", TOPIC).option("startingOffset", "latest")
    with pytest.raises(Exception, match="did you mean 'startingOffsets'") as info:
        read.load().collect()
    assert "InvalidOptionError" in str(info.value)


def test_a_misspelt_write_option_is_refused_in_spark(
    spark: SparkSession, cluster: DevClusterThread
) -> None:
    register(spark)
    rows = spark.createDataFrame([("a",)], "body string")
    write = rows.write.format("rocketmq").option("namesrv", cluster.namesrv_addr)
    write = write.option("topic", TOPIC).option("failOnErrors", "false").mode("append")
    with pytest.raises(Exception, match="did you mean 'failOnError'"):
        write.save()
    assert cluster.message_count(TOPIC) == 0  # refused before anything was sent


def test_known_names_pass_in_any_case_and_spark_s_own_are_allowed() -> None:
    options = {"NAMESRV": "127.0.0.1:9876", "topic": "T", "startingoffsets": "latest"}
    assert read_options({**options, "path": "x"}, streaming=False).starting == "latest"
    with pytest.raises(InvalidOptionError, match="did you mean 'maxOffsetsPerTrigger'"):
        read_options({**options, "maxOffsetPerTrigger": "5"}, streaming=True)

"""The response codes 5.x adds (rocketmq-all-5.3.3 ResponseCode.java) are named, and none is
retried: 5.3's DefaultMQProducer.retryResponseCodes is {17, 14, 1, 2, 16, 204, 205, 1500}."""

from __future__ import annotations

import pytest

from producer._remoting.send_header import SendResponseHeader
from producer._response_codes import RETRIED_BY_JAVA_5_3, response_code_name
from producer.errors import BrokerError

FIVE_X = {
    211: "BROKER_NOT_EXIST",
    212: "BROKER_DISPATCH_NOT_COMPLETE",
    213: "BROADCAST_CONSUMPTION",
    501: "NOT_LEADER_FOR_QUEUE",
    604: "ILLEGAL_OPERATION",
    3001: "USER_NOT_EXIST",
    3002: "POLICY_NOT_EXIST",
}


@pytest.mark.parametrize(("code", "name"), sorted(FIVE_X.items()))
def test_5x_codes_are_named_and_not_retried(code: int, name: str) -> None:
    assert response_code_name(code) == name
    error = BrokerError.for_code(code, "remark")
    assert name in str(error) and not error.retriable


def test_the_5_3_retry_set_is_java_s() -> None:
    assert frozenset({17, 14, 1, 2, 16, 204, 205, 1500}) == RETRIED_BY_JAVA_5_3


def test_a_5_3_recall_handle_is_kept_and_absent_otherwise() -> None:
    fields = {"msgId": "AB", "queueId": "1", "queueOffset": "7", "recallHandle": "djEgVCBi"}
    assert SendResponseHeader.from_fields(fields).recall_handle == "djEgVCBi"
    del fields["recallHandle"]
    assert SendResponseHeader.from_fields(fields).recall_handle is None

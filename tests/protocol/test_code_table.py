"""The one code table: errors, retry presets and send statuses all agree with it."""

from __future__ import annotations

import inspect

import pytest

import producer.errors as errors
from producer import RetryPolicy, SendStatus
from producer._response_codes import ResponseCode, response_code_name
from producer._types.send_status import send_status_for_code

BROKER_ERROR_CLASSES = [
    cls
    for _, cls in inspect.getmembers(errors, inspect.isclass)
    if issubclass(cls, errors.BrokerError) and cls not in (errors.BrokerError, errors.AclError)
]


def test_an_acl_refusal_is_told_by_its_remark_not_its_code() -> None:
    remark = (
        "org.apache.rocketmq.acl.common.AclException: No accessKey is configured, x.y(Z.java:1)"
    )
    refused = errors.BrokerError.for_code(1, remark)
    assert type(refused) is errors.AclError and refused.code == 1
    assert refused.never_retried and not refused.retriable
    assert "SYSTEM_ERROR" in str(refused)
    assert type(errors.BrokerError.for_code(1, "disk full")) is errors.BrokerSystemError


def test_java_retry_sets_are_the_ones_design_s4_names() -> None:
    assert RetryPolicy.java_4_9().retriable_codes == {1, 14, 16, 17, 204, 205}
    assert RetryPolicy.java_5_3().retriable_codes == {1, 2, 14, 16, 17, 204, 205, 1500}
    assert RetryPolicy.default().backoff_codes == {2, 215}


@pytest.mark.parametrize("cls", BROKER_ERROR_CLASSES, ids=lambda c: c.__name__)
def test_every_error_class_says_what_the_default_policy_does(cls: type[errors.BrokerError]) -> None:
    code = cls.code_value
    assert code is not None
    error = errors.BrokerError.for_code(code.value, "remark")
    assert type(error) is cls
    assert error.code_name == code.name == response_code_name(code.value)
    assert cls.retriable == RetryPolicy.default().is_retriable_code(code.value)
    assert code.name in str(error)


def test_throttling_errors_are_retried_after_a_back_off() -> None:
    # The old table called 215 "POLLING_FULL, not retried" while the policy retried it.
    assert errors.FlowControlError.retriable and errors.SystemBusyError.retriable
    assert not errors.MessageIllegalError.retriable


@pytest.mark.parametrize("status", list(SendStatus))
def test_send_statuses_round_trip_through_their_codes(status: SendStatus) -> None:
    assert send_status_for_code(status.response_code) is status


def test_error_codes_have_no_send_status_and_unknown_codes_no_name() -> None:
    assert send_status_for_code(ResponseCode.SYSTEM_BUSY) is None
    assert send_status_for_code(9999) is None
    assert response_code_name(9999) == "UNKNOWN"
    assert type(errors.BrokerError.for_code(9999)) is errors.BrokerError

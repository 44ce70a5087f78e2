"""Errors for a broker's (or name server's) error answers: one class per response code
that needs one, chosen by :meth:`BrokerError.for_code` from the one code table. Public
through :mod:`producer.errors`."""

from __future__ import annotations

from typing import ClassVar

from producer._response_codes import RETRIED_BY_DEFAULT, ResponseCode, response_code_name
from producer.errors._base import ProducerError

# -- broker answers ---------------------------------------------------------------------


class BrokerError(ProducerError):
    """The broker (or name server) answered with an error response code.

    ``BrokerError.for_code(code, remark)`` picks the subclass for the code. Each class's
    ``code_name`` and ``retriable`` come from the one code table
    (:class:`producer._response_codes.ResponseCode`): ``retriable`` says whether the
    default :class:`~producer.RetryPolicy` retries the code (throttling codes after a
    back-off); the policy in use has the final word.
    """

    code_value: ClassVar[ResponseCode | None] = None
    code_name: ClassVar[str] = "UNKNOWN"
    retriable: ClassVar[bool] = False
    #: The refusal is about the sender, not the broker: no broker or policy retries it.
    never_retried: ClassVar[bool] = False
    _by_code: ClassVar[dict[int, type[BrokerError]]] = {}

    def __init__(self, code: int, remark: str | None = None, **kwargs: object) -> None:
        text = f"broker error {code} {response_code_name(code)}"
        if remark:
            text += f": {remark}"
        super().__init__(text, code=code, **kwargs)  # type: ignore[arg-type]
        self.remark = remark

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        code = cls.code_value
        if code is not None:
            cls.code_name = code.name
            cls.retriable = code.value in RETRIED_BY_DEFAULT
            BrokerError._by_code[code.value] = cls

    @classmethod
    def for_code(cls, code: int, remark: str | None = None) -> BrokerError:
        """The typed error for a response code (``BrokerError`` itself for other codes);
        an ACL refusal, which a 4.x broker answers as SYSTEM_ERROR, is an :class:`AclError`."""
        if code == ResponseCode.SYSTEM_ERROR and remark and _ACL_EXCEPTION in remark:
            return AclError(code, remark)
        return cls._by_code.get(code, BrokerError)(code, remark)


_ACL_EXCEPTION = "org.apache.rocketmq.acl.common.AclException"


class AclError(BrokerError):
    """The broker's access control refused the request: no access key, an unknown one, a
    signature that does not match, or no permission for the topic. A 4.x broker answers
    1 SYSTEM_ERROR with an ``AclException`` remark; it is never retried (every broker of
    the cluster would say the same). Check ``credentials=`` and the account's
    permissions (the remark says which)."""

    code_name = "SYSTEM_ERROR"
    never_retried = True


class BrokerSystemError(BrokerError):
    """1 SYSTEM_ERROR: the broker failed internally."""

    code_value = ResponseCode.SYSTEM_ERROR


class SystemBusyError(BrokerError):
    """2 SYSTEM_BUSY: the broker is throttling."""

    code_value = ResponseCode.SYSTEM_BUSY


class RequestCodeNotSupportedError(BrokerError):
    """3 REQUEST_CODE_NOT_SUPPORTED: the peer does not know the request."""

    code_value = ResponseCode.REQUEST_CODE_NOT_SUPPORTED


class MessageIllegalError(BrokerError):
    """13 MESSAGE_ILLEGAL: the broker rejected the message's size or properties."""

    code_value = ResponseCode.MESSAGE_ILLEGAL


class ServiceNotAvailableError(BrokerError):
    """14 SERVICE_NOT_AVAILABLE: the broker cannot take writes now."""

    code_value = ResponseCode.SERVICE_NOT_AVAILABLE


class NoPermissionError(BrokerError):
    """16 NO_PERMISSION: the broker refuses writes to this topic."""

    code_value = ResponseCode.NO_PERMISSION


class TopicNotExistError(BrokerError):
    """17 TOPIC_NOT_EXIST: the broker (or name server) does not know the topic."""

    code_value = ResponseCode.TOPIC_NOT_EXIST


class SubscriptionParseError(BrokerError):
    """23 SUBSCRIPTION_PARSE_FAILED: the broker cannot compile the subscription's
    expression (its CHECK_CLIENT_CONFIG answer, before consuming starts); the remark is
    the parser's reason. Fix the ``sql=`` expression."""

    code_value = ResponseCode.SUBSCRIPTION_PARSE_FAILED
    never_retried = True


class InvalidParameterError(BrokerError):
    """29 INVALID_PARAMETER: a request header field was rejected."""

    code_value = ResponseCode.INVALID_PARAMETER


class NoBuyerIdError(BrokerError):
    """204 NO_BUYER_ID."""

    code_value = ResponseCode.NO_BUYER_ID


class NotInCurrentUnitError(BrokerError):
    """205 NOT_IN_CURRENT_UNIT."""

    code_value = ResponseCode.NOT_IN_CURRENT_UNIT


class FlowControlError(BrokerError):
    """215 FLOW_CONTROL: the broker is throttling."""

    code_value = ResponseCode.FLOW_CONTROL


class GoAwayError(BrokerError):
    """1500 GO_AWAY: the broker is shutting down; try another."""

    code_value = ResponseCode.GO_AWAY

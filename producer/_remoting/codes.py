"""Numeric codes of the remoting protocol (request codes, response codes, languages)."""

from __future__ import annotations

import enum


class RequestCode(enum.IntEnum):
    SEND_MESSAGE = 10
    GET_MAX_OFFSET = 30
    HEART_BEAT = 34
    UNREGISTER_CLIENT = 35
    GET_ROUTEINFO_BY_TOPIC = 105
    SEND_MESSAGE_V2 = 310
    SEND_BATCH_MESSAGE = 320


class ResponseCode(enum.IntEnum):
    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    FLUSH_DISK_TIMEOUT = 10
    SLAVE_NOT_AVAILABLE = 11
    FLUSH_SLAVE_TIMEOUT = 12
    MESSAGE_ILLEGAL = 13
    SERVICE_NOT_AVAILABLE = 14
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    INVALID_PARAMETER = 29
    NO_BUYER_ID = 204
    NOT_IN_CURRENT_UNIT = 205
    POLLING_FULL = 215
    GO_AWAY = 1500


class LanguageCode(enum.IntEnum):
    """RocketMQ's ``LanguageCode``; JSON headers carry the name, binary ones the number."""

    JAVA = 0
    CPP = 1
    DOTNET = 2
    PYTHON = 3
    DELPHI = 4
    ERLANG = 5
    RUBY = 6
    OTHER = 7
    HTTP = 8
    GO = 9
    PHP = 10
    OMS = 11
    RUST = 12


class SerializeType(enum.IntEnum):
    JSON = 0
    ROCKETMQ = 1


FLAG_RESPONSE = 0b01
FLAG_ONEWAY = 0b10

# MQVersion.Version.V4_9_4.ordinal(): what the 4.9.4 Java client sends. A name server
# answers requests at or above it with a standard-JSON route body.
PROTOCOL_VERSION = 401

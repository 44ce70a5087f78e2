"""ACL signing (AclClientRPCHook, 4.9.4): the content, the signature, and the splice of
signature fields into a pre-encoded send header."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from producer import Credentials
from producer._remoting.acl import RequestSigner, signature, signing_content
from producer._remoting.command import RemotingCommand
from producer._remoting.producer_requests import SendRequestFactory, build_send_request
from producer._remoting.request_codes import RequestCode
from producer._types.message import Message, MessageQueue
from producer.errors import InvalidOptionError
from producer.testing._acl import AccessControl, Account


def test_signature_vector_worked_out_by_hand() -> None:
    # Names sorted as Java's TreeMap sorts them: "AccessKey" < "a" < "b" (uppercase
    # first), values concatenated, body appended: b"ak" + b"grp" + b"Topic" + b"hi".
    fields = {"b": "Topic", "a": "grp", "AccessKey": "ak", "Signature": "left out"}
    content = signing_content(fields, b"hi")
    assert content == b"akgrpTopichi"
    expected = base64.b64encode(hmac.new(b"sk", b"akgrpTopichi", hashlib.sha1).digest())
    assert signature(content, "sk") == expected.decode() == "7B4niaqES8exrVqhYDRQlSSjoCA="


def test_a_signed_request_with_a_body_and_a_security_token_matches_java() -> None:
    # AclUtils.combineRequestContent over a TreeMap: "AccessKey" < "SecurityToken" <
    # "queueId" < "topic", so b"RocketMQ" + b"tok-1" + b"3" + b"Orders", then the body.
    # The signature was printed by OpenJDK 17 (TreeMap, String.getBytes("UTF-8"),
    # Mac "HmacSHA1", java.util.Base64) from that algorithm, not by this SDK.
    body = b"\x00body\xff"
    command = RemotingCommand(
        RequestCode.PULL_MESSAGE, ext_fields={"topic": "Orders", "queueId": "3"}, body=body
    )
    RequestSigner(Credentials("RocketMQ", "12345678", security_token="tok-1"))(command)
    fields = command.ext_fields or {}
    assert (fields["AccessKey"], fields["SecurityToken"]) == ("RocketMQ", "tok-1")
    assert fields["Signature"] == "YWtlkF4dvjQZa/oVKo+roIqIBh0="
    assert signing_content(fields, body) == b"RocketMQtok-13Orders" + body


def test_signing_content_is_utf8_and_skips_what_the_broker_skips() -> None:
    fields = {"k": "é", "_UNIQUE_KEY_QUERY": "x"}
    assert signing_content(fields, b"") == "xé".encode()  # "_" sorts before "k"
    assert signing_content(fields, b"", skip="_UNIQUE_KEY_QUERY") == "é".encode()


def test_signer_adds_access_key_token_and_signature() -> None:
    command = RemotingCommand(RequestCode.GET_MAX_OFFSET, ext_fields={"topic": "T"}, body=b"")
    RequestSigner(Credentials("ak", "sk", security_token="tok"))(command)
    fields = command.ext_fields or {}
    assert (fields["AccessKey"], fields["SecurityToken"]) == ("ak", "tok")
    # "AccessKey" < "SecurityToken" < "topic": b"ak" + b"tok" + b"T"
    assert fields["Signature"] == signature(b"aktokT", "sk")


def test_a_signer_also_signs_requests_without_ext_fields() -> None:
    command = RemotingCommand(RequestCode.HEART_BEAT, body=b'{"clientID":"c"}')
    RequestSigner(Credentials("ak", "sk"))(command)
    assert command.ext_fields is not None
    assert command.ext_fields["Signature"] == signature(b'ak{"clientID":"c"}', "sk")


def test_a_signed_pre_encoded_send_is_accepted_by_the_broker_check() -> None:
    factory = SendRequestFactory("grp")
    prepared = factory.prepare(Message("T", b"body", tags="x"), "0A0000010001000000000000000000A0")
    request = build_send_request(prepared, MessageQueue("T", "broker-a", 2), 1_700_000_000_000)
    RequestSigner(Credentials("ak", "sk"))(request)
    decoded = request.to_command()  # what the broker decodes from the bytes
    assert decoded.field("AccessKey") == "ak" and decoded.field("b") == "T"
    access = AccessControl([Account("ak", "sk", default_topic_perm="PUB")])
    assert access.refusal(decoded) is None
    tampered = request.to_command()
    assert tampered.ext_fields is not None
    tampered.ext_fields["e"] = "3"  # another queue: the signature no longer matches
    assert "Check signature failed for accessKey=ak" in (access.refusal(tampered) or "")


def test_credentials_are_validated_and_keep_the_secret_out_of_repr() -> None:
    credentials = Credentials("ak", "very-secret", security_token="tok-secret")
    assert "very-secret" not in repr(credentials) and "tok-secret" not in repr(credentials)
    for bad in (("", "sk"), ("ak", ""), ("ak", None)):
        with pytest.raises(InvalidOptionError):
            Credentials(*bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError):
        Credentials("ak", "sk", security_token="")

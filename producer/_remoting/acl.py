"""ACL request signing, as RocketMQ 4.x's ``AclClientRPCHook`` does it (pure).

Facts from the 4.9.4 source (``AclClientRPCHook``, ``AclUtils``, ``AclSigner``,
``PlainAccessValidator``):

* the client adds ``AccessKey`` (and ``SecurityToken`` when it has one) to the ext fields,
  then signs: every ext field except ``Signature``, sorted by name (a Java ``TreeMap``;
  the names are ASCII, so Python's order is the same), their values concatenated and
  UTF-8 encoded, the body appended; HMAC-SHA1 with the secret key; Base64; the result
  goes into ``Signature``.
* the broker re-computes it over the ext fields it received, leaving out ``Signature``
  and ``_UNIQUE_KEY_QUERY``.

Every request the client sends passes the same signer (:class:`RequestSigner`, one
``outgoing`` step of the remoting client), sends with a pre-encoded header included.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping

from producer._remoting.command import OutgoingRequest
from producer._types.credentials import Credentials
from producer.errors import InvalidOptionError

ACCESS_KEY = "AccessKey"
SECURITY_TOKEN = "SecurityToken"
SIGNATURE = "Signature"
UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"  # the broker leaves it out of the content


def signing_content(ext_fields: Mapping[str, str], body: bytes, *, skip: str = SIGNATURE) -> bytes:
    """What gets signed: the values of every ext field but ``skip`` (and ``Signature``),
    in the order of their names, then the body."""
    values = "".join(
        value for name, value in sorted(ext_fields.items()) if name not in (SIGNATURE, skip)
    )
    return values.encode("utf-8") + body


def signature(content: bytes, secret_key: str) -> str:
    """Base64 of HMAC-SHA1(``content``) keyed with the UTF-8 secret key."""
    digest = hmac.new(secret_key.encode("utf-8"), content, hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


class RequestSigner:
    """Adds ``AccessKey`` (+ ``SecurityToken``) and ``Signature`` to a request."""

    __slots__ = ("_credentials", "_identity")

    def __init__(self, credentials: Credentials) -> None:
        self._credentials = credentials
        identity = {ACCESS_KEY: credentials.access_key}
        if credentials.security_token is not None:
            identity[SECURITY_TOKEN] = credentials.security_token
        self._identity = identity

    def __call__(self, request: OutgoingRequest) -> None:
        fields = {**(request.ext_fields or {}), **self._identity}
        signed = signature(signing_content(fields, request.body), self._credentials.secret_key)
        request.add_ext_fields({**self._identity, SIGNATURE: signed})

    def __repr__(self) -> str:
        return f"RequestSigner(access_key={self._credentials.access_key!r})"


def signer_for(credentials: object) -> RequestSigner | None:
    """The producer's ``credentials=`` option as its signing step (``None``: unsigned)."""
    if credentials is None:
        return None
    if not isinstance(credentials, Credentials):
        raise InvalidOptionError(
            f"credentials must be a producer.Credentials, got {type(credentials).__name__}"
        )
    return RequestSigner(credentials)

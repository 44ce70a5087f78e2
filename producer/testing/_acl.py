"""The dev cluster's access control: what a 4.9.4 broker with ``aclEnable=true`` checks.

``DevCluster(acl=[Account(...), ...])`` turns it on for every broker (a 4.9 name server
checks nothing). Each request is checked as ``PlainAccessValidator`` and
``PlainPermissionManager.validate`` do, in their order, and a refusal is answered the
way the real broker answers an ``AclException``: code 1 SYSTEM_ERROR, remark
``org.apache.rocketmq.acl.common.AclException: <message>, <where it was thrown>``:

* no ``AccessKey`` ext field -> ``No accessKey is configured``;
* an unknown access key -> ``No acl config for <key>``;
* a signature that does not match -> ``Check signature failed for accessKey=<key>``;
* a send (SEND_MESSAGE / SEND_MESSAGE_V2) to a topic the account may not publish to ->
  ``No default permission for topic:<topic>``. As in 4.9.4, SEND_BATCH_MESSAGE asks for
  no topic permission (its request code is not in the validator's list): only the
  signature is checked.

Permissions are ``"DENY"``, ``"PUB"``, ``"SUB"`` or ``"PUB|SUB"``; a topic not listed
gets ``default_topic_perm``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from producer._remoting.acl import (
    ACCESS_KEY,
    SIGNATURE,
    UNIQUE_MSG_QUERY_FLAG,
    signature,
    signing_content,
)
from producer._remoting.command import RemotingCommand
from producer._remoting.request_codes import RequestCode
from producer._remoting.retry_topics import RETRY_PREFIX
from producer.errors import LocalProtocolError

_DENY, _ANY, _PUB, _SUB = 1, 2, 4, 8
_PERMS = {"DENY": _DENY, "PUB": _PUB, "SUB": _SUB, "PUB|SUB": _PUB | _SUB}
_EXCEPTION = "org.apache.rocketmq.acl.common.AclException"
# Where 4.9.4 throws each refusal: the frame Java's exceptionSimpleDesc appends.
_VALIDATE = (
    "org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:{})"
)
_CHECK_PERM = (
    "org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPerm(PlainPermissionManager.java:{})"
)


@dataclass(frozen=True)
class Account:
    """One ACL account of the dev cluster (a ``plain_acl.yml`` entry)."""

    access_key: str
    secret_key: str = field(repr=False)
    topic_perms: Mapping[str, str] = field(default_factory=dict)
    default_topic_perm: str = "DENY"

    def __post_init__(self) -> None:
        if not self.access_key or not self.secret_key:
            raise LocalProtocolError("an ACL account needs an access key and a secret key")
        for perm in (*self.topic_perms.values(), self.default_topic_perm):
            if perm not in _PERMS:
                raise LocalProtocolError(f"ACL permission {perm!r} is not one of {sorted(_PERMS)}")

    def perm_for(self, topic: str) -> int:
        """This account's permission bits for ``topic`` (its own entry, else the default)."""
        return _PERMS[self.topic_perms.get(topic, self.default_topic_perm)]


class AccessControl:
    """Checks requests against the accounts; ``refusal(request)`` is the remark or None."""

    def __init__(self, accounts: Iterable[Account]) -> None:
        self.accounts = {account.access_key: account for account in accounts}

    def refusal(self, request: RemotingCommand) -> str | None:
        fields = request.ext_fields or {}
        access_key = fields.get(ACCESS_KEY)
        if access_key is None:
            return _refused("No accessKey is configured", _VALIDATE.format(663))
        account = self.accounts.get(access_key)
        if account is None:
            return _refused(f"No acl config for {access_key}", _VALIDATE.format(667))
        content = signing_content(fields, request.body, skip=UNIQUE_MSG_QUERY_FLAG)
        if signature(content, account.secret_key) != fields.get(SIGNATURE):
            message = f"Check signature failed for accessKey={access_key}"
            return _refused(message, _VALIDATE.format(683))
        topic = _published_topic(request.code, fields)
        if topic is not None and not _permits(_PUB, account.perm_for(topic)):
            return _refused(f"No default permission for topic:{topic}", _CHECK_PERM.format(605))
        return None

    def __repr__(self) -> str:
        return f"AccessControl(accounts={sorted(self.accounts)})"


def _published_topic(code: int, fields: Mapping[str, str]) -> str | None:
    """The topic a send needs PUB on (retry topics need SUB on the group: not modelled)."""
    if code == RequestCode.SEND_MESSAGE:
        topic = fields.get("topic")
    elif code == RequestCode.SEND_MESSAGE_V2:
        topic = fields.get("b")
    else:
        return None
    return None if topic is None or topic.startswith(RETRY_PREFIX) else topic


def _permits(needed: int, owned: int) -> bool:
    """``Permission.checkPermission``."""
    if owned & _DENY:
        return False
    if needed & _ANY:
        return bool(owned & (_PUB | _SUB))
    return bool(needed & owned)


def _refused(message: str, where: str) -> str:
    return f"{_EXCEPTION}: {message}, {where}"

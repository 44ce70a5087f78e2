"""An ACL account's keys; ``producer._remoting.acl`` signs requests with them."""

from __future__ import annotations

from dataclasses import dataclass, field

from producer.errors import InvalidOptionError

__all__ = ["Credentials"]


@dataclass(frozen=True, slots=True)
class Credentials:
    """An ACL account's keys (``AclClientRPCHook``'s ``SessionCredentials``).

    The secret never appears in ``repr`` or error messages."""

    access_key: str
    secret_key: str = field(repr=False)
    security_token: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for name in ("access_key", "secret_key"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise InvalidOptionError(f"Credentials.{name} must be a non-empty string")
        token = self.security_token
        if token is not None and (not isinstance(token, str) or not token):
            raise InvalidOptionError(
                "Credentials.security_token must be a non-empty string or None"
            )

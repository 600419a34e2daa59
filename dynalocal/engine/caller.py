"""Who sends a request: its access key, region and account, and the catalog scope its tables live in.

A `Caller` is immutable and made per request by whoever knows the caller (the HTTP layer's
authentication plug-in, the seed loader, the console's item browser) and passed to
`engine.dispatch.respond` and from there to the handler: the shared `Context` holds no
per-request identity. The authentication plug-in caches its Callers, so a request makes none.
"""
from __future__ import annotations

from dynalocal.storage.database import ACCOUNT, REGION, SCOPE_SEPARATOR


def scope_of(isolation: str, region: str, account: str) -> str:
    """The catalog key prefix of a caller's tables (storage.database): per region, per account
    and region, or none (shared)."""
    if isolation == "region":
        return region + SCOPE_SEPARATOR
    if isolation == "account":
        return account + SCOPE_SEPARATOR + region + SCOPE_SEPARATOR
    return ""


class Caller:
    """The caller of one request (immutable): access key, region, account (for ARNs), and `scope`,
    the catalog key prefix of the tables it sees ("" unless --isolation region|account)."""

    __slots__ = ("access_key", "region", "account", "scope")

    access_key: str
    region: str
    account: str
    scope: str

    def __init__(self, access_key: str, region: str, account: str, isolation: str = "shared") -> None:
        set_ = object.__setattr__
        set_(self, "access_key", access_key)
        set_(self, "region", region)
        set_(self, "account", account)
        set_(self, "scope", scope_of(isolation, region, account))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a Caller is immutable: cannot set {name}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"a Caller is immutable: cannot delete {name}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Caller:
            return NotImplemented
        return (self.access_key, self.region, self.account, self.scope) == (
            other.access_key, other.region, other.account, other.scope)

    def __hash__(self) -> int:
        return hash((self.access_key, self.region, self.account, self.scope))

    def __repr__(self) -> str:
        return f"Caller({self.access_key!r}, {self.region!r}, {self.account!r}, scope={self.scope!r})"


ANONYMOUS = Caller("", REGION, ACCOUNT)  # no identity given (unsigned requests, embedded use, tools)

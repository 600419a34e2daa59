"""The Host check's rules (server/hosts.py): which binds check, which names pass."""
from __future__ import annotations

import pytest

from dynalocal.http.hosts import HostPolicy, host_name, is_loopback_bind


@pytest.mark.parametrize("bind, loopback", [("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("[::1]", True),
                                            ("localhost", True), ("0.0.0.0", False), ("::", False),
                                            ("192.168.1.10", False), ("myhost", False)])
def test_which_binds_are_loopback(bind, loopback):
    assert is_loopback_bind(bind) is loopback


@pytest.mark.parametrize("value, name", [("a.example:80", "a.example"), ("[::1]:8000", "::1"), ("[::1]", "::1"),
                                         ("::1", "::1"), ("LocalHost", "localhost"), (" x ", "x")])
def test_host_name_drops_port_and_brackets(value, name):
    assert host_name(value) == name


def test_loopback_bind_allows_loopback_names_ips_and_listed_names_only():
    policy = HostPolicy("127.0.0.1", ["dev.test", "Other.Test."])
    for ok in (b"localhost", b"localhost.", b"a.b.localhost:1", b"127.0.0.1:8000", b"[::1]", b"192.168.0.7",
               b"dev.test", b"DEV.TEST:8000", b"other.test", None):
        assert policy.allows(ok), ok
    for bad in (b"evil.example", b"localhost.evil.example", b"dev.test.evil", b"127.0.0.1.nip.io", b"", b"[zz]",
                b"localhost:80@evil.example", b"localhost:x", b"localhost:80:81", b"127.0.0.1/x", b"[::1]evil"):
        assert not policy.allows(bad), bad
    assert policy.allows(b"localhost")  # remembered: still allowed


def test_non_loopback_bind_or_a_star_allows_everything():
    assert HostPolicy("0.0.0.0").allows(b"evil.example")
    assert HostPolicy("127.0.0.1", ["*"]).allows(b"evil.example")
    assert HostPolicy("127.0.0.1").refusal(b"evil.example").body()["__type"].endswith("#AccessDeniedException")

"""The per-request Caller, and what other layers derive from the operation catalogue."""
from __future__ import annotations

import pytest

from dynalocal.engine.caller import ANONYMOUS, Caller, scope_of
from dynalocal.engine.operations import CONTROL, HANDLERS, KNOWN_OPERATIONS, OPERATIONS, STREAM_HANDLERS, tagged
from dynalocal.expressions import compile as expression_compiler
from dynalocal.http import durability


def test_a_caller_is_immutable_and_carries_its_scope():
    caller = Caller("AKID", "eu-west-1", "111122223333", "account")
    assert caller.scope == scope_of("account", "eu-west-1", "111122223333") == "111122223333/eu-west-1/"
    with pytest.raises(AttributeError):
        caller.scope = ""  # type: ignore[misc]
    assert Caller("AKID", "eu-west-1", "111122223333", "account") == caller
    assert ANONYMOUS.scope == "" and (ANONYMOUS.region, ANONYMOUS.account) == ("us-east-1", "000000000000")


def test_every_operation_has_exactly_one_of_read_write_control():
    for op in OPERATIONS.values():
        assert len(op.tags & {"read", "write", "control"}) == 1, op.name
    assert set(HANDLERS) | set(STREAM_HANDLERS) == set(OPERATIONS)
    assert set(HANDLERS) <= KNOWN_OPERATIONS and not set(STREAM_HANDLERS) & KNOWN_OPERATIONS


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_the_journal_kind_follows_the_catalogue(operation):
    kind = durability._kind_of("DynamoDB_20120810." + operation)
    tags = OPERATIONS[operation].tags
    assert kind == (durability.CONTROL if CONTROL in tags else durability.TOKEN if "token" in tags
                    else durability.DATA)


def test_the_expression_compiler_is_configured_from_the_catalogue():
    assert expression_compiler.PREFIXED_OPERATIONS == tagged("single-item") == {"PutItem", "UpdateItem", "DeleteItem"}
    assert expression_compiler._PARAMS["Scan"] == (OPERATIONS["Scan"].expressions, OPERATIONS["Scan"].legacy)

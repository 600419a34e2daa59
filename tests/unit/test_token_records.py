"""TOKEN log records: round trip through a group, collected by recovery, expired ones not restored."""
from __future__ import annotations

from dynalocal.journal import wal
from dynalocal.journal.recovery import Replayer
from dynalocal.journal.tokens import encode_token, restore
from dynalocal.storage.database import Database

FINGERPRINT = bytes(range(32))


def test_token_record_round_trip_and_replay():
    payload = encode_token(FINGERPRINT, {"ConsumedCapacity": []}, 1000.0)
    group = wal.encode_group([(wal.TOKEN, "tok-round-trip", payload, None)])
    entries = wal.decode_group(group)
    assert entries == [(wal.TOKEN, "tok-round-trip", payload, None)]
    assert "tok-round-trip" not in wal._RAW_NAMES and b"tok-round-trip" not in wal._NAMES  # tokens are not cached
    replayer = Replayer(Database())
    replayer.add(entries)
    replayer.flush()
    assert replayer.tokens == {"tok-round-trip": payload}
    assert wal.next_intact_frame(b"\x00" + wal.frame(group), 0) == 1  # a group may start with a token record


def test_recovery_keeps_tokens_for_their_ten_minutes_only():
    """Age from the recorded wall-clock time; expired tokens are dropped."""
    records = {"fresh": encode_token(FINGERPRINT, {"ConsumedCapacity": []}, 10_000.0),
               "old": encode_token(FINGERPRINT, b"{}", 10_000.0 - 601.0),
               "future": encode_token(FINGERPRINT, b"{}", 10_100.0),  # the clock was set back since
               "short": b"\x00"}
    restored = restore(records, 600.0, wall_now=10_060.0, monotonic_now=500.0)
    assert set(restored) == {"fresh", "future"}
    assert restored["fresh"] == (FINGERPRINT, b'{"ConsumedCapacity":[]}', 440.0)
    assert restored["future"][2] == 500.0

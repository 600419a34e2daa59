"""bench/protocol_cost.py still measures what it names: every variant answers its GetItem, and our
protocols' answers are 200s carrying the item (the script's own check; twice it measured empty
answers after a change to when the HTTP layer runs requests and writes answers)."""
from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load():
    sys.path.insert(0, str(BENCH))  # the script imports bench/bare_protocol.py as a sibling
    try:
        spec = importlib.util.spec_from_file_location("protocol_cost", BENCH / "protocol_cost.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


def test_every_variant_answers_and_our_protocols_return_the_item() -> None:
    protocol_cost = _load()
    loop = asyncio.new_event_loop()
    try:
        runs, transports = protocol_cost.variants(loop)
        assert set(runs) == {"bare", "handler", "protocol", "plug-ins"}
        for run in runs.values():
            run()
        protocol_cost.check(transports)  # each request's own answer is out once its round has ended
        for run in runs.values():
            for _ in range(3):  # the same connection, request after request
                run()
        protocol_cost.check(transports)
        status, body, _ = runs["handler"]()
        assert status == 200 and b"payload" in body
    finally:
        loop.close()


def test_the_program_callgrind_counts_answers_each_variant() -> None:
    """`--instructions` counts runs of `only`: each must answer its requests (checked there), or the
    count would be of errors."""
    protocol_cost = _load()
    for variant in protocol_cost.VARIANTS:
        protocol_cost.only(variant, 3)

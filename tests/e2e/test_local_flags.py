"""Starting dynalocal as DynamoDB Local is started: its flags, its environment-driven container use,
the container health check following the configured port, and -delayTransientStatuses."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import boto3
import pytest
from botocore.config import Config
from conftest import free_port
from test_cli import CLEAN_EXIT, Running, executable

KEYS = [{"AttributeName": "id", "KeyType": "HASH"}]
DEFS = [{"AttributeName": "id", "AttributeType": "S"}]


def client(port: int):
    session = boto3.session.Session(aws_access_key_id="local", aws_secret_access_key="local", region_name="us-west-2")
    return session.client("dynamodb", endpoint_url=f"http://127.0.0.1:{port}",
                          config=Config(retries={"max_attempts": 0}))


def healthcheck(pid: int, **env: str) -> int:
    return subprocess.run([sys.executable, "-m", "dynalocal.cli.healthcheck", "--pid", str(pid)],
                          env=dict(os.environ, **env), timeout=30, capture_output=True).returncode


def test_dynamodb_locals_documented_command_line():
    # java -Djava.library.path=./DynamoDBLocal_lib -jar DynamoDBLocal.jar -port 8001 -inMemory -sharedDb
    port = free_port()
    server = Running([executable("dynalocal"), "-port", str(port), "-inMemory", "-sharedDb",
                      "-optimizeDbBeforeStartup", "-disableTelemetry"], port)
    try:
        ddb = client(port)
        ddb.create_table(TableName="local-flags", KeySchema=KEYS, AttributeDefinitions=DEFS,
                         BillingMode="PAY_PER_REQUEST")
        ddb.put_item(TableName="local-flags", Item={"id": {"S": "a"}})
        assert ddb.get_item(TableName="local-flags", Key={"id": {"S": "a"}})["Item"] == {"id": {"S": "a"}}
        assert healthcheck(server.proc.pid) == 0  # the container check reads -port from the command line
    finally:
        code, output = server.stop()
    assert code in CLEAN_EXIT, output


def test_configured_from_the_environment_as_a_container_is(tmp_path):
    port = free_port()
    env = {"DYNALOCAL_PORT": str(port), "DYNALOCAL_DATA_DIR": str(tmp_path), "DYNALOCAL_LOG_LEVEL": "warning"}
    command = [executable("dynalocal")]
    os.environ.update(env)  # Running passes os.environ on
    try:
        server = Running(command, port)
    finally:
        for name in env:
            del os.environ[name]
    try:
        client(port).create_table(TableName="from-env", KeySchema=KEYS, AttributeDefinitions=DEFS,
                                  BillingMode="PAY_PER_REQUEST")
        assert healthcheck(server.proc.pid, **env) == 0
        assert healthcheck(server.proc.pid) == 1  # without DYNALOCAL_PORT it would probe 8000
    finally:
        code, output = server.stop()
    assert code in CLEAN_EXIT, output
    assert any(tmp_path.iterdir()), "DYNALOCAL_DATA_DIR was not used"


def test_db_path_and_cors_flags_persist_like_dynamodb_local(tmp_path):
    port = free_port()
    command = [executable("dynalocal"), "-port", str(port), "-dbPath", str(tmp_path), "-sharedDb", "-cors", "*"]
    server = Running(command, port)
    try:
        client(port).create_table(TableName="kept", KeySchema=KEYS, AttributeDefinitions=DEFS,
                                  BillingMode="PAY_PER_REQUEST")
    finally:
        code, output = server.stop()
    assert code in CLEAN_EXIT, output
    server = Running(command, port)
    try:
        assert client(port).list_tables()["TableNames"] == ["kept"]
    finally:
        server.stop()


@pytest.mark.parametrize("argv, words", [
    (["-help"], "DynamoDB Local"), (["--version"], "dynalocal 0."),
])
def test_help_and_version(argv, words):
    out = subprocess.run([sys.executable, "-m", "dynalocal", *argv], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and words in out.stdout


def test_delay_transient_statuses():
    port = free_port()
    server = Running([executable("dynalocal"), "-port", str(port), "-inMemory", "-delayTransientStatuses"], port)
    try:
        ddb = client(port)
        assert ddb.create_table(TableName="slow", KeySchema=KEYS, AttributeDefinitions=DEFS,
                                BillingMode="PAY_PER_REQUEST")["TableDescription"]["TableStatus"] == "CREATING"
        created = time.monotonic()
        # code that skips the waiter fails, as on AWS, unless a whole second went by (a very busy machine)
        try:
            ddb.put_item(TableName="slow", Item={"id": {"S": "a"}})
            assert time.monotonic() - created >= 1.0, "a CREATING table accepted a write"
        except ddb.exceptions.ResourceNotFoundException:
            pass
        deadline = time.monotonic() + 30
        while ddb.describe_table(TableName="slow")["Table"]["TableStatus"] != "ACTIVE":
            assert time.monotonic() < deadline, "the table never became ACTIVE"
            time.sleep(0.05)
        ddb.put_item(TableName="slow", Item={"id": {"S": "a"}})
    finally:
        server.stop()

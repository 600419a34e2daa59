"""PartiQL through the AWS CLI's `aws dynamodb execute-statement` (awscli is a test dependency)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def aws_command() -> str:
    beside = Path(sys.executable).parent / "aws"
    found = str(beside) if beside.exists() else shutil.which("aws")
    assert found, "the AWS CLI is not installed (pip install -e '.[test]')"
    return found


def aws(server, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_PAGER": "", "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull}
    return subprocess.run([aws_command(), "dynamodb", *args, "--endpoint-url", server.url, "--output", "json"],
                          capture_output=True, text=True, env=env, timeout=60)


@pytest.fixture
def table(make_table):
    return make_table([("pk", "HASH"), ("sk", "RANGE")], [("pk", "S"), ("sk", "N")])


def test_execute_statement_from_the_cli(server, table):
    for i in range(3):
        done = aws(server, "execute-statement", "--statement", f"INSERT INTO \"{table}\" VALUE {{'pk': 'a', 'sk': {i}}}")
        assert done.returncode == 0, done.stderr
    done = aws(server, "execute-statement", "--statement", f'SELECT sk FROM "{table}" WHERE pk = ? ORDER BY sk DESC',
               "--parameters", '[{"S": "a"}]')
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["Items"] == [{"sk": {"N": str(i)}} for i in (2, 1, 0)]
    done = aws(server, "execute-statement", "--statement", f'UPDATE "{table}" SET v = 1 WHERE pk = \'a\' AND sk = 1 '
               "RETURNING ALL NEW *")
    assert json.loads(done.stdout)["Items"] == [{"pk": {"S": "a"}, "sk": {"N": "1"}, "v": {"N": "1"}}]


def test_cli_shows_dynamodb_errors(server, table):
    done = aws(server, "execute-statement", "--statement", f"INSERT INTO \"{table}\" VALUE {{'pk': 'a'}}")
    assert done.returncode != 0
    assert "ValidationException" in done.stderr and "Key attribute should be present in the item: Key sk" in done.stderr
    done = aws(server, "execute-statement", "--statement", f'SELECT * FROM "{table}" WHERE')
    assert "Statement wasn't well formed, can't be processed" in done.stderr


def test_cli_batch_and_transaction(server, table):
    statements = json.dumps([{"Statement": f"INSERT INTO \"{table}\" VALUE {{'pk': 'b', 'sk': {i}}}"} for i in range(2)])
    done = aws(server, "batch-execute-statement", "--statements", statements)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["Responses"] == [{"TableName": table}] * 2
    reads = json.dumps([{"Statement": f"SELECT * FROM \"{table}\" WHERE pk = 'b' AND sk = {i}"} for i in range(2)])
    done = aws(server, "execute-transaction", "--transact-statements", reads)
    assert done.returncode == 0, done.stderr
    assert [r["Item"]["sk"]["N"] for r in json.loads(done.stdout)["Responses"]] == ["0", "1"]

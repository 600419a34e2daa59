"""The port answers while the data directory loads: health says "loading", DynamoDB requests get a
retryable 503, and a client with retries succeeds once loading is done (issue 28)."""
from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

import boto3
from botocore.config import Config
from conftest import TEST_HOSTS

from dynalocal.cli.build import build_server
from dynalocal.config import Settings


def _get(url: str, data: bytes | None = None, headers: dict | None = None) -> tuple[int, dict, bytes]:
    request = urllib.request.Request(url, data=data, headers=headers or {}, method="POST" if data else "GET")
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def test_health_says_loading_and_requests_get_a_retryable_503_until_the_data_directory_is_loaded(tmp_path):
    server = build_server(Settings(data_dir=str(tmp_path / "data"), port=0, allowed_hosts=TEST_HOSTS),
                          load_later=True)
    release = threading.Event()
    load = server.load
    assert load is not None

    def slow_load() -> None:  # the loader, held until the test has seen the loading answers
        assert release.wait(30)
        load()

    server.load = slow_load
    thread = threading.Thread(target=server.run, kwargs={"signals": False}, daemon=True)
    thread.start()
    try:
        assert server.started.wait(30) and server.error is None
        url = f"http://127.0.0.1:{server.port}"
        status, headers, body = _get(url + "/_dynalocal/health")
        assert (status, json.loads(body)) == (503, {"status": "loading"}) and headers["retry-after"] == "1"
        status, _, body = _get(url + "/", b"{}", {"Content-Type": "application/x-amz-json-1.0",
                                                 "X-Amz-Target": "DynamoDB_20120810.ListTables"})
        assert status == 503 and json.loads(body)["__type"].endswith("#ServiceUnavailable")
        client = boto3.client("dynamodb", endpoint_url=url, region_name="us-east-1", aws_access_key_id="a",
                              aws_secret_access_key="b", config=Config(retries={"mode": "standard", "max_attempts": 1}))
        try:
            client.list_tables()
            raise AssertionError("answered while loading")
        except client.exceptions.ClientError as err:  # what botocore retries (here: no attempt left)
            assert err.response["ResponseMetadata"]["HTTPStatusCode"] == 503
            assert err.response["Error"]["Code"] == "ServiceUnavailable"
        retrying = boto3.client("dynamodb", endpoint_url=url, region_name="us-east-1", aws_access_key_id="a",
                                aws_secret_access_key="b", config=Config(retries={"mode": "standard",
                                                                                  "max_attempts": 10}))
        answers: list = []
        caller = threading.Thread(target=lambda: answers.append(retrying.list_tables()))
        caller.start()
        release.set()
        caller.join(60)
        assert answers and answers[0]["TableNames"] == []
        status, _, body = _get(url + "/_dynalocal/health")
        assert status == 200 and json.loads(body)["status"] == "ok"
        assert not server.loading
    finally:
        release.set()
        server.stop()
        thread.join(30)

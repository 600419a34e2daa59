"""The package as a user gets it: `python -m build` makes an sdist and a wheel (the wheel built from the sdist,
so the sdist is complete) that carry the licence, the metadata, the console and the service models, and the
wheel installs in a fresh virtual environment (dependencies from the package registries) and serves."""
from __future__ import annotations

import email
import json
import subprocess
import sys
import tarfile
import urllib.request
import venv
import zipfile
from pathlib import Path

import boto3
import pytest
from conftest import free_port
from test_cli import CLEAN_EXIT, Running

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """sdist and wheel built as PyPA's front end does (offline: the build requirements are the test extra's)."""
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def only(folder: Path, pattern: str) -> Path:
    (found,) = folder.glob(pattern)
    return found


def test_the_wheel_carries_licence_metadata_console_and_models(dist):
    wheel = only(dist, "dynalocal-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for part in ("dynalocal/admin/console/console.html", "dynalocal/admin/console/console.js",
                 "dynalocal/admin/console/console.css", "dynalocal/py.typed"):
        assert part in names, f"{part} is missing from the wheel"
    assert any(n.startswith("dynalocal/engine/models/") and n.endswith(".json.gz") for n in names)
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
    metadata = email.message_from_bytes(zipfile.ZipFile(wheel).read(metadata_name))
    assert metadata["License-Expression"] == "Apache-2.0"
    urls = {value.split(",")[0].strip().lower() for value in metadata.get_all("Project-URL")}
    assert {"homepage", "documentation", "issues"} <= urls
    assert metadata["Author"] and metadata.get_all("Classifier") and metadata["Keywords"]


def test_the_sdist_carries_sources_and_licence(dist):
    sdist = only(dist, "dynalocal-*.tar.gz")
    names = {name.split("/", 1)[1] for name in tarfile.open(sdist).getnames() if "/" in name}
    assert {"LICENSE", "README.md", "pyproject.toml", "dynalocal/admin/console/console.js"} <= names


def test_the_wheel_installs_in_a_fresh_venv_and_serves(dist, tmp_path):
    env_dir = tmp_path / "fresh"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    wheel = only(dist, "dynalocal-*.whl")
    install = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                              str(wheel)], capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    where = subprocess.run([str(python), "-c", "import dynalocal; print(dynalocal.__file__)"], capture_output=True,
                           text=True, timeout=60, cwd=tmp_path)
    assert where.stdout.startswith(str(env_dir)), where.stdout + where.stderr  # the wheel's copy, not this tree
    port = free_port()
    server = Running([str(env_dir / "bin" / "dynalocal"), "--port", str(port)], port)
    try:
        session = boto3.session.Session(aws_access_key_id="x", aws_secret_access_key="x", region_name="eu-west-1")
        ddb = session.client("dynamodb", endpoint_url=server.url)
        ddb.create_table(TableName="wheel", KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                         AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                         BillingMode="PAY_PER_REQUEST")
        ddb.put_item(TableName="wheel", Item={"id": {"S": "a"}})
        assert ddb.get_item(TableName="wheel", Key={"id": {"S": "a"}})["Item"] == {"id": {"S": "a"}}
        with urllib.request.urlopen(server.url + "/_dynalocal/tables", timeout=10) as resp:
            assert "wheel" in json.dumps(json.loads(resp.read()))
        with urllib.request.urlopen(server.url + "/_dynalocal/console/console.js", timeout=10) as resp:
            assert resp.status == 200 and resp.read()
    finally:
        code, output = server.stop()
    assert code in CLEAN_EXIT, output

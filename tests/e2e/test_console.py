"""The web console in a real browser: headless Chromium (Debian's package, installed by `make test`)
loads /_dynalocal/console against a server under a hot-key load and shows the hot partition and key.

The screenshot is kept as a test artifact in .artifacts/console.png (gitignored); its path is printed.
"""
from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from conftest import FakeClock, LiveServer
from diagnosis_load import create, put

from dynalocal.config import Settings
from dynalocal.engine.context import Context

ARTIFACTS = Path(__file__).resolve().parents[2] / ".artifacts"


def chromium() -> str:
    """Chromium's command. Missing: a failure under CI or where `make browser` could have installed it (root with
    apt-get), a skip naming the package elsewhere (a laptop without root, macOS)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if found:
        return found
    could_install = os.geteuid() == 0 and shutil.which("apt-get") is not None
    if os.environ.get("CI", "").lower() in ("1", "true", "yes") or could_install:
        pytest.fail("chromium is not installed: `make test` installs Debian's chromium package when run as root "
                    "(apt-get install chromium)")
    pytest.skip("the console's browser test needs Chromium, which cannot be installed here (not root, or no "
                "apt-get): install Debian's `chromium` package (macOS: `brew install --cask chromium`); CI runs it")


def browse(url: str, profile: Path, *extra: str) -> subprocess.CompletedProcess:
    """Headless Chromium on `url`, with 8 s of virtual time for the page's fetches and refreshes."""
    command = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
               "--hide-scrollbars", f"--user-data-dir={profile}", "--virtual-time-budget=8000",
               "--window-size=1400,1100", *extra, url]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


@pytest.fixture
def hot_server():
    """A server with a hot key: one date written at twice its partition's ceiling, still being written."""
    clock = FakeClock()
    with LiveServer(Context(settings=Settings(partition_burst_seconds=0), clock=clock)) as server:
        ddb = server.client(retries={"total_max_attempts": 1, "mode": "standard"})
        create(ddb, "orders-by-date")
        for n in range(30):
            put(ddb, "orders-by-date", "2024-11-23", 100)
            put(ddb, "orders-by-date", f"2024-11-{n % 20:02d}", 1)
            if n % 10 == 9:
                clock.now += 1.0
        stop = threading.Event()

        def load() -> None:  # the hot-key load goes on while the browser looks
            n = 0
            while not stop.is_set() and n < 400:
                put(ddb, "orders-by-date", "2024-11-23", 100)
                n += 1
                if n % 20 == 0:
                    clock.now += 1.0

        worker = threading.Thread(target=load, daemon=True)
        worker.start()
        try:
            yield server
        finally:
            stop.set()
            worker.join(60)


def test_console_shows_hot_partition_and_key(hot_server, tmp_path, figure):
    url = f"{hot_server.url}/_dynalocal/console?table=orders-by-date"
    done = browse(url, tmp_path / "profile", "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    assert 'data-table="orders-by-date"' in dom  # the table list
    verdict = re.search(r'<div class="verdict problem" data-kind="hot key" data-key="([^"]*)" '
                        r'data-partition="(\d+)"', dom)
    assert verdict, dom[:3000]
    assert html.unescape(verdict.group(1)) == "2024-11-23"
    partition = verdict.group(2)
    # the heat map marks that partition's row hot, with throttled seconds in it
    row = re.search(rf'<div class="heat-row hot" data-partition="{partition}">(.*?)</div></div>', dom)
    assert row and f"partition {partition}" in row.group(1) and "HOT" in row.group(1)
    assert 'class="cell throttled"' in row.group(1)
    assert '<tr data-key="2024-11-23">' in dom  # the top keys
    assert "items" in re.search(r'<span id="browse-status"[^>]*>([^<]*)<', dom).group(1)  # the item browser's Scan

    # the item browser's Query, opened by link: only the queried key's items
    done = browse(f"{url}&query=2024-11-05", tmp_path / "profile3", "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    rows = re.findall(r"<tr><td>([^<]*)</td>", done.stdout.split('id="items"', 1)[1])
    assert rows and set(rows) == {"2024-11-05"}
    assert re.search(r'<span id="browse-status"[^>]*>(\d+) items<', done.stdout).group(1) == str(len(rows))

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "console.png"
    done = browse(url, tmp_path / "profile2", f"--screenshot={shot}")
    assert done.returncode == 0 and shot.exists() and shot.stat().st_size > 10_000, done.stderr[-2000:]
    figure(f"console screenshot: {shot}")

"""A minimal Chrome DevTools Protocol driver over `--remote-debugging-pipe` (no WebSocket, no
dependency): headless Chromium on one page, JavaScript evaluated in it, conditions waited for by
polling, and screenshots. Enough for the console's user-flow test."""
from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any

# What DevTools answers when the page navigated (a form submitted, a link followed) while it ran a command.
NAVIGATING = ("navigated or closed", "Execution context was destroyed", "Cannot find context with specified id")


class Navigating(AssertionError):
    """The page navigated while a command ran in it: `wait_for` asks the next page."""


class Browser:
    """Headless Chromium with one page; `evaluate` runs an expression there and returns its value."""

    def __init__(self, chromium: str, profile: Path, width: int = 1400, height: int = 1200) -> None:
        child_reads, self._write = os.pipe()
        self._read, child_writes = os.pipe()
        # high numbers for the child's ends, so the shell's `3<&R 4>&W` cannot overwrite one with the other
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (child_reads, child_writes)]
        os.close(child_reads)
        os.close(child_writes)
        command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                   "--disable-background-networking", "--disable-component-update", "--disable-sync",
                   "--no-first-run", "--hide-scrollbars", f"--user-data-dir={profile}", "--remote-debugging-pipe",
                   f"--window-size={width},{height}", "about:blank"]
        self.process = subprocess.Popen(["bash", "-c", f'exec "$0" "$@" 3<&{high[0]} 4>&{high[1]}', *command],
                                        pass_fds=high, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for fd in high:
            os.close(fd)
        self._buffer = b""
        self._id = 0
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                         "mobile": False}, page=True)

    def send(self, method: str, params: dict | None = None, page: bool = False, timeout: float = 30) -> dict:
        """One DevTools command (to the page's session if `page`); its result, or AssertionError on error."""
        self._id += 1
        message: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if page:
            message["sessionId"] = self.session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            for reply in self._messages(deadline):
                if reply.get("id") == self._id:
                    error = reply.get("error")
                    if error is not None and any(n in str(error.get("message")) for n in NAVIGATING):
                        raise Navigating(f"{method}: {error}")
                    assert error is None, f"{method}: {error}"
                    return reply["result"]

    def _messages(self, deadline: float) -> list[dict]:
        left = deadline - time.monotonic()
        assert left > 0, "Chromium did not answer in time"
        ready, _, _ = select.select([self._read], [], [], left)
        if ready:
            chunk = os.read(self._read, 1 << 20)
            assert chunk, "Chromium closed its DevTools pipe"
            self._buffer += chunk
        *whole, self._buffer = self._buffer.split(b"\0")
        return [json.loads(m) for m in whole]

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, page=True)
        details = result.get("exceptionDetails")
        if details is not None and any(n in str(details) for n in NAVIGATING):
            raise Navigating(str(details))
        assert details is None, details
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 15, explain: str | None = None) -> Any:
        """Poll until the expression is truthy in the page; its value. On time-out the message shows
        the value of `explain` (e.g. a status line) when given."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = self.evaluate(expression)
            except Navigating:  # a form submitted or a link followed: ask the next page
                value = None
            if value:
                return value
            if time.monotonic() >= deadline:
                seen = f" (saw {self.evaluate(explain)!r})" if explain else ""
                raise AssertionError(f"timed out waiting for: {expression}{seen}")
            time.sleep(0.05)

    def navigate(self, url: str) -> None:
        self.send("Page.navigate", {"url": url}, page=True)

    def screenshot(self, path: Path) -> Path:
        """A PNG of the page's viewport at `path`."""
        data = self.send("Page.captureScreenshot", {"format": "png"}, page=True)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        self.process.kill()
        self.process.wait(30)
        for fd in (self._write, self._read):
            os.close(fd)

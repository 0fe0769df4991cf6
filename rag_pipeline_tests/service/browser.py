"""A served app on a loopback port and the system's headless Chromium driven by Playwright.

Playwright never downloads a browser here: it drives the Debian ``chromium`` package at
:data:`CHROMIUM` (``.ci/setup`` installs it) with a fresh profile folder.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]
START_TIMEOUT_S = 20.0


@contextmanager
def serve_in_thread(app) -> Iterator[str]:
    """Runs ``app`` with uvicorn on 127.0.0.1 (a free port) and yields its base URL."""
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=START_TIMEOUT_S)


@contextmanager
def chromium_page(profile: Path) -> Iterator[object]:
    """A Playwright page in headless Chromium with a fresh profile folder."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1100, "height": 900})
        try:
            yield context.new_page()
        finally:
            context.close()

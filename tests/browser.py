"""Headless Chromium (Debian's) driven by Playwright, with every request and console message recorded."""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager


from .conftest import skip_or_fail

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--no-first-run", "--disable-sync"]


def chromium_path() -> str:
    path = os.environ.get("COMPILESCOPE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(path):
        skip_or_fail("Debian chromium not installed (apt-get install -y chromium)")
    return path


@contextmanager
def browser_page():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_or_fail("playwright not installed")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.console_errors = []
        page.external_requests = []
        page.on("console", lambda m: m.type == "error" and page.console_errors.append(m.text))
        page.on("pageerror", lambda e: page.console_errors.append(str(e)))
        page.on("request", lambda r: not r.url.startswith(("file:", "data:", "about:")) and page.external_requests.append(r.url))
        try:
            yield page
        finally:
            browser.close()

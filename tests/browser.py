"""Headless Chromium (Debian's) driven by Playwright, with every request and console message recorded."""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

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
    # Chromium keeps its profile, crash reports and dconf cache under $HOME: give it a home of its own,
    # so the suite's $HOME stays empty (conftest checks).
    with sync_playwright() as p, tempfile.TemporaryDirectory(prefix="compilescope-chromium-") as home:
        env = {**os.environ, "HOME": home, "XDG_CONFIG_HOME": f"{home}/.config", "XDG_CACHE_HOME": f"{home}/.cache"}
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS, env=env)
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


PHONE, LAPTOP = 390, 1280  # the window widths a report must fit: a phone's (the pages say width=device-width), a laptop's


def pages_wider_than_the_window(page, out: Path, widths: tuple[int, ...] = (LAPTOP, PHONE)) -> list[str]:
    """Every page under out, at each width, with every <details> open (a metrics group holds the longest values):
    "WIDTH px: PAGE" for each page that scrolls sideways."""
    wide = []
    pages = sorted(out.rglob("*.html"))
    for width in widths:
        page.set_viewport_size({"width": width, "height": 900})
        for html in pages:
            page.goto(html.as_uri())
            page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
            if page.evaluate("document.documentElement.scrollWidth > document.documentElement.clientWidth"):
                wide.append(f"{width} px: {html.relative_to(out)}")
    return wide

"""Open a written report in the user's browser (never in CI, never where there is none)."""

from __future__ import annotations

import os


def open_browser(index: str) -> None:
    if os.environ.get("CI"):
        return
    import webbrowser  # here: it pulls in subprocess, shlex, ... which a --no-browser run never needs

    try:
        webbrowser.get()
    except webbrowser.Error:
        return  # no browser here (a server, a container): the printed path is enough
    webbrowser.open("file://" + index)

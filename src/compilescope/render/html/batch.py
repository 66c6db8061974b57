"""The landing page of several logs reported at once: one row per log, linking to its report."""

from __future__ import annotations

from typing import Iterator

import orjson
from markupsafe import Markup

from ...analyses.log_digest import LogDigest
from .env import ENV

REPORTS_JSON = "reports.json"


def batch_files(rows: list[tuple[str, LogDigest, str | None]], custom_header_html: str = "") -> Iterator[tuple[str, str | bytes]]:
    """rows: (name, digest, url of its report or None). The landing page and the same figures as JSON."""
    yield "index.html", ENV.get_template("batch.html").render(
        root="", source_name=f"{len(rows)} logs", rank=None, nav_failures=False,
        rows=[{"name": name, "digest": digest, "url": url} for name, digest, url in rows],
        json_name=REPORTS_JSON, custom_header_html=Markup(custom_header_html),
        **({"script_src": Markup("'unsafe-inline'")} if custom_header_html else {}),
    )
    doc = [{"name": name, "report": url, **digest.to_json()} for name, digest, url in rows]
    yield REPORTS_JSON, orjson.dumps(doc, option=orjson.OPT_INDENT_2)

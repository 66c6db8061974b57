"""Read the cells of every table row of an HTML page (for comparing reports)."""

from __future__ import annotations

from html.parser import HTMLParser


class _Rows(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th") and self.rows:
            self._cell = []
        elif tag in ("script", "style"):
            self._in_script = True

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag in ("script", "style"):
            self._in_script = False

    def handle_data(self, data):
        if self._cell is not None and not self._in_script:
            self._cell.append(data)


def table_rows(html: str) -> list[list[str]]:
    parser = _Rows()
    parser.feed(html)
    return [r for r in parser.rows if r]

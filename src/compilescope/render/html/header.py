"""--custom-header-html's ordinary slips mended (balanced_html). Its own module: html.parser compiles about twenty
patterns on import, which a report without a header should not pay for."""
from html.parser import HTMLParser
from typing import Any


_VOID_TAGS = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
                        "wbr"})


class _Balancer(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.out: list[str] = []
        self.open: list[str] = []

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self.out.append(self.get_starttag_text() or "")
        if tag not in _VOID_TAGS:
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: Any) -> None:
        self.out.append(self.get_starttag_text() or "")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.open:  # (one it did not open would close an element of the page: dropped)
            while self.open:
                opened = self.open.pop()
                self.out.append(f"</{opened}>")
                if opened == tag:
                    break

    def handle_data(self, data: str) -> None:
        # (a script's or style's text is code; elsewhere a '<' the parser did not take for a tag, `<!--` left open
        # included, is text)
        self.out.append(data if self.open and self.open[-1] in ("script", "style") else data.replace("<", "&lt;"))

    def handle_entityref(self, name: str) -> None:
        self.out.append(f"&{name};")

    def handle_charref(self, name: str) -> None:
        self.out.append(f"&#{name};")

    def handle_comment(self, data: str) -> None:
        self.out.append(f"<!--{data}-->")


def balanced_html(html: str) -> str:
    """A trusted HTML fragment with its ordinary slips mended: every element it opens closed at its end, end tags of
    elements it did not open dropped, an unterminated comment shown as text; doctypes and processing instructions
    dropped. Not a sanitizer: Python's HTMLParser splits some markup unlike a browser (a comment ended by `--!>`, a
    `</textarea>` inside an attribute of a textarea's text, `<plaintext>`, a script's `<!--<script>`), so crafted
    markup can still reach past the fragment. The fragment is the user's own (given on the command line, as tlparse
    inserts it raw) and may run script, which can change the whole page anyway: holding against such markup would
    need a browser's tokenizer and protect nothing."""
    parser = _Balancer()
    parser.feed(html)
    parser.close()
    return "".join(parser.out) + "".join(f"</{tag}>" for tag in reversed(parser.open))

"""How both renderers find a `code` span in advice (torch's hints, the report's notes, a log's message): the pages
show it as <code>, the terminal never breaks it (terminal_text.CopyableText)."""

from __future__ import annotations

import re

# Backticks around text on one line, none inside. A backtick opens a span only at a word's start (the line's start,
# after a space or ( [ ") and closes one only at a word's end (before a space, punctuation or the line's end): the
# text is untrusted, and a stray backtick ("Avoid calling builtin print` with ...", a hint of compile_error_raises)
# paired with the next one and made the prose between them one span. Group 1: the code.
CODE_SPAN = re.compile(r'(?<![^\s(\["])`([^`\n]+)`(?![\w`])')

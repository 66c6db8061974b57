"""Shared by the export tests: synthetic draft-export logs and reading the issue tables."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from ..conftest import tlparse_binary
from ..htmltable import table_rows
from ..tracelog import envelope

USER = [{"line": 22, "name": "forward", "filename": 0, "loc": "if n > 2:"}]
FRAMEWORK = [{"line": 8000, "name": "evaluate_expr", "filename": 1}]


def draft_export_log(path: Path, events: list[dict], program: str | None = "ExportedProgram:\n    class G:\n        pass") -> Path:
    """A log as draft_export writes it: interned file names, no compile ids, the program last."""
    text = envelope({"str": ["/home/me/prog.py", 0]}) + envelope({"str": ["/torch/fx/experimental/symbolic_shapes.py", 1]})
    for event in events:
        text += envelope(event, pathname="torch/_logging/_internal.py")
    if program is not None:
        text += envelope({"exported_program": {}}, program)
    path.write_text(text)
    return path


def expression(result_id: int, result: str, method: str, arguments: list[str], argument_ids: list[int]) -> dict:
    return {"expression_created": {"method": method, "result": result, "result_id": result_id, "arguments": arguments,
                                   "argument_ids": argument_ids, "user_stack": USER, "stack": FRAMEWORK}}


def unbacked(node_id: int, symbol: str) -> dict:
    return {"create_unbacked_symbol": {"symbol": symbol, "node_id": node_id, "vr": "[-int_oo, int_oo]",
                                       "user_stack": USER, "stack": FRAMEWORK}}


# Older torch logs a local as a string; torch 2.13 as a list of its flattened values (tlparse 0.4.3
# cannot read those), so the differential tests use strings.
OLD_LOCALS = {"n": "u0", "gone": None}


def guard(expr: str, prefix: str | None, node_id: int | None = None, locals_: dict = OLD_LOCALS) -> dict:
    meta = {"expr": expr, "user_stack": USER, "stack": FRAMEWORK, "symbol_to_sources": {},
            "frame_locals": {"loc": "if n > 2:", "locals": locals_, "symbols": {}}}
    if prefix is not None:
        meta["prefix"] = prefix
    if node_id is not None:
        meta["expr_node_id"] = node_id
    return {"guard_added": meta}


def data_dependent(expr: str, result: str, node_id: int, locals_: dict = OLD_LOCALS) -> dict:
    return {"propagate_real_tensors_provenance": {
        "expr": expr, "result": result, "expr_node_id": node_id, "user_stack": USER, "stack": FRAMEWORK,
        "symbol_to_sources": {"s0": "L['x'].size()[0]"},
        "frame_locals": {"loc": "if n > 2:", "locals": locals_, "symbols": {"s0": "L['x'].size()[0]"}}}}


def issue_rows(index_html: str) -> list[tuple[str, str]]:
    """(failure type, reason) of each row of our issue table."""
    m = re.search(r'<table class="issues" id="issue-table">.*?</table>', index_html, re.S)
    if m is None:
        return []
    return [(r[1], r[2]) for r in table_rows(m.group(0))[1:]]


def tlparse_export(log: Path, out: Path) -> tuple[list[tuple[str, str]], str | None]:
    """tlparse --export: its (failure type, reason) rows and the text of the exported program it links."""
    subprocess.run([tlparse_binary(), str(log), "--export", "-o", str(out), "--no-browser", "--overwrite"],
                   check=True, capture_output=True, timeout=300)
    index = (out / "index.html").read_text()
    rows = [(r[0], r[1]) for r in table_rows(index)[1:]]
    link = re.search(r'exported program: <a href="([^"]*)">', index)
    program = (out / link.group(1)).read_text() if link and link.group(1) else None
    return rows, program

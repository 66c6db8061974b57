"""Write small synthetic TORCH_TRACE logs in torch's exact format (for unit tests), and read real ones without
compilescope (raw_records)."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from pathlib import Path


def envelope(obj: dict, payload: str | None = None, pathname: str = "torch/_dynamo/x.py") -> str:
    obj = dict(obj)
    if payload is not None:
        obj["has_payload"] = hashlib.md5(payload.encode()).hexdigest()
    line = f"V1121 09:58:36.209000 2267 {pathname}:1] {json.dumps(obj)}\n"
    if payload is not None:
        line += "".join(f"\t{p}\n" for p in payload.split("\n"))
    return line


def cid(frame: int, fcid: int = 0, attempt: int = 0) -> dict:
    return {"frame_id": frame, "frame_compile_id": fcid, "attempt": attempt}


_ENVELOPE = re.compile(r"^V\d{4} \S+ \d+ \S+\] (\{.*\})$")


def raw_records(log: Path) -> list[tuple[dict, str]]:
    """A real log's (envelope, payload) records in order, read without compilescope (gzipped or not): what tests
    derive their expected values from. A payload is the tab-indented lines after its envelope."""
    data = log.read_bytes()
    text = (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode()
    out: list[tuple[dict, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("\t") and out:
            out[-1][1].append(line[1:])
        elif m := _ENVELOPE.match(line):
            out.append((json.loads(m.group(1)), []))
    return [(envelope, "\n".join(payload)) for envelope, payload in out]


def graph_nodes(records: list[tuple[dict, str]], artifact: str, site: re.Pattern[str],
                node: re.Pattern[str]) -> dict[str, list[tuple[int | str, ...]]]:
    """compile id ("[0/1]") -> (program line, *node's groups) of each line of its `artifact` graph dump (a post-grad
    graph) that node matches, read without compilescope; the program line is that of the last `# File:` comment
    above it that site matches (its group 1), 0 before any."""
    found: dict[str, list[tuple[int | str, ...]]] = {}
    for env, payload in records:
        if env.get("artifact", {}).get("name") != artifact:
            continue
        nodes = found.setdefault(f"[{env['frame_id']}/{env['frame_compile_id']}]", [])
        line = 0
        for raw in payload.splitlines():
            if (at := site.search(raw)) is not None:
                line = int(at[1])
            elif (matched := node.match(raw)) is not None:
                nodes.append((line, *matched.groups()))
    return found

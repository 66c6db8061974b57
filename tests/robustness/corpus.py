"""The bad-input corpus: each function builds one broken, hostile or odd input from a real log.

Nothing here is committed as a big file: every input is generated into a temporary
directory from the real torch 2.13 logs in tests/data/torch213/logs (and, for the
huge payload, from nothing at all). Each entry of CORPUS says what the input is
and what compilescope must do with it:

- ``usable``: a full report of everything readable, and these problem categories listed;
- ``unusable``: no report, one error line naming the reason, exit status 2.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..conftest import torch213
from ..tracelog import cid, envelope

# The base log of most cases: graph breaks (dynamo_start stacks, restarts, payloads of every
# shape: graphs, guards, output code, chromium events, compilation metrics).
BASE = "graph_breaks.log"
_PREFIX = re.compile(rb"^[VIWEC]\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ +[^\]]+\] ")


def base_bytes(name: str = BASE) -> bytes:
    return torch213(name).read_bytes()


def lines_of(data: bytes) -> list[bytes]:
    """The log's lines, each with its newline (the last one may have none)."""
    return data.splitlines(keepends=True)


def envelope_indices(lines: list[bytes]) -> list[int]:
    return [i for i, line in enumerate(lines) if _PREFIX.match(line)]


def payload_envelope_index(lines: list[bytes], kind: bytes = b'"dynamo_output_graph"') -> int:
    """Index of the first envelope of kind whose payload follows it."""
    return next(i for i in envelope_indices(lines) if kind in lines[i] and b"has_payload" in lines[i])


def fix_md5(lines: list[bytes], i: int) -> None:
    """Recompute has_payload of the envelope at i after its payload lines were edited (torch's md5)."""
    j = i + 1
    while j < len(lines) and lines[j][:1] == b"\t":
        j += 1
    payload = b"\n".join(line.rstrip(b"\n")[1:] for line in lines[i + 1 : j])
    lines[i] = re.sub(rb'"has_payload": "[0-9a-f]{32}"',
                      b'"has_payload": "' + hashlib.md5(payload).hexdigest().encode() + b'"', lines[i])


def with_rank(lines: list[bytes], rank: int) -> list[bytes]:
    """The lines with `"rank": rank` added to every envelope (payloads, and so md5s, unchanged)."""
    return [line.replace(b"] {", b'] {"rank": %d, ' % rank, 1) if _PREFIX.match(line) else line for line in lines]


def expected_records(data: bytes) -> int:
    """How many records a log holds, counted independently of the reader.

    A record is a line that is neither blank nor a payload line (TAB first), or a run
    of payload lines that nothing claims (at the start of the file or after a line of
    spaces). An empty line is ignored altogether: it does not end a payload (tlparse's
    rule: editors strip the lone TAB of an empty payload line). A UTF-8 byte order mark
    that opens the file is an editor's, not part of the first line.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    records = 0
    attached = False  # a record is open that payload lines attach to
    for line in data.split(b"\n"):
        if line[:1] == b"\t":
            if not attached:
                records += 1
                attached = True
            continue
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line:
            continue
        if not line.strip():
            attached = False
            continue
        records += 1
        attached = True
    return records


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[Path], Path]  # writes the input under the given directory, returns its path
    usable: bool = True
    problems: frozenset[str] = field(default_factory=frozenset)  # categories that must be listed
    error: str = ""  # for unusable input: a fragment of the one error line
    strict_fails: bool = True  # --strict exits 1 (usable input with problems)
    counts_exact: bool = True  # expected_records() applies (plain text, read to its end)
    lost: int | None = 0  # records of the base log no longer read (None: a truncated log, not checked)


def _write(directory: Path, name: str, data: bytes) -> Path:
    path = directory / name
    path.write_bytes(data)
    return path


# -- truncation ---------------------------------------------------------------------------------


def truncated_mid_payload(d: Path) -> Path:
    lines = lines_of(base_bytes())
    i = payload_envelope_index(lines)
    return _write(d, "truncated_mid_payload.log", b"".join(lines[: i + 6]))


def truncated_mid_line(d: Path) -> Path:
    lines = lines_of(base_bytes())
    i = envelope_indices(lines)[40]
    return _write(d, "truncated_mid_line.log", b"".join(lines[:i]) + lines[i][: len(lines[i]) // 2])


def truncated_gzip(d: Path) -> Path:
    packed = gzip.compress(base_bytes())
    return _write(d, "truncated.log.gz", packed[: len(packed) * 2 // 3])


def gzip_with_trailing_garbage(d: Path) -> Path:
    return _write(d, "trailing_garbage.log.gz", gzip.compress(base_bytes()) + b"not gzip at all")


# -- bytes that are not text ---------------------------------------------------------------------


def invalid_utf8_in_envelope(d: Path) -> Path:
    lines = lines_of(base_bytes())
    i = next(i for i in envelope_indices(lines) if b'"dynamo_start"' in lines[i])
    lines[i] = lines[i].replace(b'"name": "', b'"name": "\xff\xfe', 1)
    return _write(d, "invalid_utf8_envelope.log", b"".join(lines))


def invalid_utf8_in_payload(d: Path) -> Path:
    lines = lines_of(base_bytes())
    i = payload_envelope_index(lines)
    lines[i + 3] = b"\t# \xc3\x28 \xff" + lines[i + 3][1:]
    fix_md5(lines, i)  # the bytes are what torch logged: only their encoding is wrong
    return _write(d, "invalid_utf8_payload.log", b"".join(lines))


def nul_bytes(d: Path) -> Path:
    """A NUL in the middle of an envelope's JSON string, and one in a payload."""
    lines = lines_of(base_bytes())
    i = next(i for i in envelope_indices(lines) if b'"compilation_metrics"' in lines[i])
    lines[i] = lines[i].replace(b'"co_name": "', b'"co_name": "nul\x00here', 1)
    j = payload_envelope_index(lines)
    lines[j + 2] = b"\t\x00\x00" + lines[j + 2][1:]
    fix_md5(lines, j)
    return _write(d, "nul_bytes.log", b"".join(lines))


def crlf_line_endings(d: Path) -> Path:
    return _write(d, "crlf.log", base_bytes().replace(b"\n", b"\r\n"))


def binary_png(d: Path) -> Path:
    """A PNG named like a log (someone attached the wrong file)."""
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    raw = b"".join(b"\x00" + bytes((x * 7 + y * 3) % 256 for x in range(64)) for y in range(64))
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 64, 64, 8, 0, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    return _write(d, "dedicated_log_torch_trace_screenshot.log", png)


def random_binary(d: Path) -> Path:
    return _write(d, "binary.log", hashlib.sha512(b"seed").digest() * 2000)


# -- broken structure ----------------------------------------------------------------------------


def corrupt_json(d: Path) -> Path:
    lines = lines_of(base_bytes())
    idx = envelope_indices(lines)
    for i in idx[5], idx[25]:
        lines[i] = lines[i].replace(b"{", b"{{", 1)
    return _write(d, "corrupt_json.log", b"".join(lines))


def md5_mismatch(d: Path) -> Path:
    lines = lines_of(base_bytes())
    i = payload_envelope_index(lines, b'"dynamo_output_graph"')
    lines[i + 1] = lines[i + 1].rstrip(b"\n") + b" # edited\n"
    return _write(d, "md5_mismatch.log", b"".join(lines))


def orphan_payload(d: Path) -> Path:
    """Payload lines at the start of the file (a log cut at the front) and after a line of spaces."""
    lines = lines_of(base_bytes())
    i = envelope_indices(lines)[10]
    lines.insert(i, b"   \n\tstray payload line\n\tanother\n")
    return _write(d, "orphan_payload.log", b"\tlost payload\n" + b"".join(lines))


def garbage_lines(d: Path) -> Path:
    lines = lines_of(base_bytes())
    i = envelope_indices(lines)[12]
    lines.insert(i, b"Traceback (most recent call last):\n  File \"x.py\", line 1\n")
    return _write(d, "garbage_lines.log", b"".join(lines))


def very_long_lines(d: Path) -> Path:
    """A 3 MB envelope line (read whole), a 5 MB payload line, and a 3 MB line that is not a trace line."""
    big = "x" * (3 << 20)
    extra = (
        envelope({"artifact": {"name": "long_metadata", "encoding": "string", "note": big}, **cid(0)}, "short")
        + envelope({"dynamo_output_graph": {}, **cid(0)}, "y" * (5 << 20))
        + "not a trace line " + big + "\n"
    ).encode()
    return _write(d, "very_long_lines.log", base_bytes() + extra)


def unknown_kinds(d: Path) -> Path:
    extra = (
        envelope({"brand_new_kind_from_torch_3": {"x": 1}, **cid(0)}, "its payload")
        + envelope({"another_new_kind": [1, 2, 3]})
    ).encode()
    return _write(d, "unknown_kinds.log", base_bytes() + extra)


def duplicated_compile_ids(d: Path) -> Path:
    """The first compile's envelopes (dynamo_start to compilation_metrics) logged twice."""
    lines = lines_of(base_bytes())
    idx = envelope_indices(lines)
    start = next(i for i in idx if b'"dynamo_start"' in lines[i])
    end = next(i for i in idx if b'"compilation_metrics"' in lines[i])
    end = next((i for i in idx if i > end), len(lines))
    block = lines[start:end]
    return _write(d, "duplicated_compile_ids.log", b"".join(lines[:end] + block + lines[end:]))


def other_rank_entries(d: Path) -> Path:
    """A rank-0 file (by name and content) with rank-1 envelopes mixed in, one of them first."""
    out = with_rank(lines_of(base_bytes()), 0)
    stray = envelope({"artifact": {"name": "from_rank_1", "encoding": "string"}, "rank": 1, **cid(0)}, "rank 1 text")
    stray2 = envelope({"dynamo_start": {"stack": []}, "rank": 1, **cid(7)})
    at = envelope_indices(out)[50]
    return _write(d, "dedicated_log_torch_trace_rank_0_abc123.log",
                  stray.encode() + b"".join(out[:at]) + stray2.encode() + b"".join(out[at:]))


def mismatched_rank_name(d: Path) -> Path:
    """A file named rank 3 that holds only rank 0 (a renamed copy): read as the rank it holds."""
    return _write(d, "dedicated_log_torch_trace_rank_3.log", b"".join(with_rank(lines_of(base_bytes()), 0)))


def deeply_nested_json(d: Path) -> Path:
    """JSON nested 300 levels: orjson reads up to 1024 but writes at most 255."""
    deep = "[" * 300 + "]" * 300
    prefix = "V1121 09:58:36.209000 2267 torch/_dynamo/x.py:1] "
    extra = (prefix + '{"compilation_metrics": {"x": ' + deep + '}, "frame_id": 9, "frame_compile_id": 0, "attempt": 0}\n'
             + envelope({"chromium_event": {}}, '{"x": ' + deep + "}")
             + envelope({"artifact": {"name": "deep", "encoding": "json"}, **cid(0)}, deep))
    return _write(d, "deeply_nested.log", base_bytes() + extra.encode())


def python_json_constants(d: Path) -> Path:
    """NaN and Infinity: not JSON, but Python's json.dumps (torch's) writes them."""
    prefix = "V1121 09:58:36.209000 2267 torch/_dynamo/x.py:1] "
    extra = prefix + '{"compilation_metrics": {"x": NaN, "y": -Infinity, "co_name": "f"}, "frame_id": 9, "frame_compile_id": 0, "attempt": 0}\n'
    return _write(d, "nan.log", base_bytes() + extra.encode())


# -- inputs that cannot be used at all ------------------------------------------------------------


def empty_file(d: Path) -> Path:
    return _write(d, "empty.log", b"")


def only_blank_lines(d: Path) -> Path:
    return _write(d, "blank.log", b"\n\n   \n\r\n")


def directory_without_logs(d: Path) -> Path:
    logs = d / "no_logs"
    logs.mkdir()
    (logs / "notes.md").write_text("nothing here")
    (logs / "empty.log").write_bytes(b"")
    return logs


def missing_path(d: Path) -> Path:
    return d / "does_not_exist.log"


def device_path(d: Path) -> Path:
    return Path("/dev/zero")  # endless: must be refused, not read


def unreadable_file(d: Path) -> Path:
    path = _write(d, "unreadable.log", base_bytes())
    os.chmod(path, 0)
    return path


CORPUS: list[Case] = [
    Case("truncated_mid_payload", truncated_mid_payload, lost=None, problems=frozenset({"md5_mismatch"})),
    Case("truncated_mid_line", truncated_mid_line, lost=None, problems=frozenset({"bad_json"})),
    Case("truncated_gzip", truncated_gzip, lost=None, problems=frozenset({"read_error"}), counts_exact=False),
    Case("gzip_with_trailing_garbage", gzip_with_trailing_garbage, problems=frozenset({"read_error"}), counts_exact=False),
    Case("invalid_utf8_in_envelope", invalid_utf8_in_envelope, problems=frozenset({"invalid_utf8"})),
    Case("invalid_utf8_in_payload", invalid_utf8_in_payload, problems=frozenset({"invalid_utf8"})),
    Case("nul_bytes", nul_bytes, problems=frozenset({"control_chars"})),
    Case("crlf_line_endings", crlf_line_endings, strict_fails=False),
    Case("corrupt_json", corrupt_json, lost=2, problems=frozenset({"bad_json"})),
    Case("md5_mismatch", md5_mismatch, problems=frozenset({"md5_mismatch"})),
    Case("orphan_payload", orphan_payload, problems=frozenset({"orphan_payload"})),
    Case("garbage_lines", garbage_lines, problems=frozenset({"bad_prefix"})),
    Case("very_long_lines", very_long_lines, problems=frozenset({"bad_prefix"})),
    Case("unknown_kinds", unknown_kinds, strict_fails=False),
    Case("duplicated_compile_ids", duplicated_compile_ids, strict_fails=False),
    Case("other_rank_entries", other_rank_entries, problems=frozenset({"other_rank"}), strict_fails=False),
    Case("mismatched_rank_name", mismatched_rank_name, strict_fails=False),
    Case("deeply_nested_json", deeply_nested_json, problems=frozenset({"bad_json", "handler_error"})),
    Case("python_json_constants", python_json_constants, strict_fails=False),
    Case("empty_file", empty_file, usable=False, error="the log is empty"),
    Case("only_blank_lines", only_blank_lines, usable=False, error="the log is empty"),
    Case("binary_png", binary_png, usable=False, error="not a TORCH_TRACE log"),
    Case("random_binary", random_binary, usable=False, error="not a TORCH_TRACE log"),
    Case("directory_without_logs", directory_without_logs, usable=False, error="no TORCH_TRACE logs"),
    Case("missing_path", missing_path, usable=False, error="no such file or directory"),
    Case("device_path", device_path, usable=False, error="not a regular file (a device)"),
]
CASES = {case.name: case for case in CORPUS}


# -- hostile content: every place a log string reaches the report ------------------------------------

# Each would run script if it reached a page unescaped; each sets a sentinel the browser test reads.
XSS = [
    '<script>window.__pwned = "script"</script>',
    '<img src=x onerror="window.__pwned = \'img\'">',
    '</script><script>window.__pwned = "breakout"</script><!--',
    '"><svg onload="window.__pwned = \'attr\'">',
    "javascript:window.__pwned='href'",
]
EVIL = " ".join(XSS)
TRAVERSAL_NAMES = [
    "../../../../tmp/compilescope_escape",
    "/tmp/compilescope_escape_abs",
    "..",
    "CON",
    "nul.txt",
    "a/b\\c",
    "x" * 400,
    "<b>bold</b>.html",
]


def hostile_log(d: Path, name: str = "hostile.log") -> Path:
    """A log crafted so that every string torch logs carries script, and every name a path escape."""
    c0 = cid(0)
    c1 = cid(1)
    text = ""
    text += envelope({"str": [f"/home/u/{EVIL}.py", 0]})
    text += envelope({"str": ["../../../../tmp/compilescope_escape_dump.py", 1]})
    text += envelope({"dynamo_start": {"stack": [
        {"filename": 0, "line": 3, "name": EVIL, "loc": EVIL},
        {"filename": 1, "line": 1, "name": "f"},
        {"filename": EVIL, "line": 9, "name": "g"},
    ]}, **c0})
    text += envelope({"dump_file": {"name": "../../../../tmp/compilescope_escape_dump.py"}}, f"x = 1  # {EVIL}\n")
    text += envelope({"dump_file": {"name": EVIL}}, "y = 2")
    text += envelope({"dynamo_output_graph": {"sizes": {EVIL: [1]}}, **c0}, f"graph():\n    {EVIL}")
    for i, bad in enumerate(TRAVERSAL_NAMES):
        text += envelope({"artifact": {"name": bad, "encoding": "string"}, **c0}, f"artifact {i} {EVIL}")
    text += envelope({"artifact": {"name": EVIL, "encoding": "json"}, **c0}, json.dumps({EVIL: [EVIL]}))
    text += envelope({"artifact": {"name": "inductor_provenance_tracking_kernel_stack_traces", "encoding": "json"}, **c0},
                     json.dumps({EVIL: [EVIL, {"k": EVIL}]}))
    text += envelope({"graph_dump": {"name": "../../../../tmp/compilescope_escape_gd"}, **c0}, EVIL)
    text += envelope({"graph_dump": {"name": f"{EVIL}_code"}, **c0}, f"// {EVIL}")
    text += envelope({"inductor_output_code": {"filename": f"/tmp/../../{EVIL}/../../../../tmp/compilescope_escape.py"}, **c0},
                     f"# {EVIL}\ndef call(args):\n    return '{EVIL}'")
    # Provenance (pre/post-grad graphs, node mappings): its page embeds JSON in a <script> element.
    text += envelope({"inductor_pre_grad_graph": {}, **c0}, f"def forward(self, x):\n    evil = torch.sin(x)  # {EVIL}")
    text += envelope({"inductor_post_grad_graph": {}, **c0}, f"def forward(self, x):\n    sin = torch.sin(x)  # {EVIL}")
    text += envelope({"artifact": {"name": "inductor_provenance_tracking_node_mappings", "encoding": "json"}, **c0},
                     json.dumps({"preToPost": {"evil": ["sin"], EVIL: [EVIL]}, "postToPre": {"sin": ["evil"]},
                                 "cppCodeToPost": {EVIL: ["sin"]}, "postToCppCode": {"sin": [EVIL]}}))
    text += envelope({"optimize_ddp_split_child": {"name": "../../../../tmp/compilescope_escape_ddp"}, **c0}, EVIL)
    text += envelope({"dynamo_guards": {}, **c0}, json.dumps([
        {"code": EVIL, "stack": [{"filename": EVIL, "line": 1, "name": EVIL}],
         "user_stack": [{"filename": 0, "line": 2, "name": EVIL, "loc": EVIL}]},
    ]))
    text += envelope({"dynamo_cpp_guards_str": {}, **c0}, EVIL)
    text += envelope({"symbolic_shape_specialization": {"symbol": EVIL, "sources": [EVIL], "value": EVIL, "reason": EVIL,
                                                        "user_stack": [{"filename": EVIL, "line": 1, "name": EVIL}]}, **c0})
    text += envelope({"guard_added": {"expr": EVIL, "user_stack": [{"filename": EVIL, "line": 1, "name": EVIL}]}, **c0})
    text += envelope({"create_symbol": {"symbol": EVIL, "val": EVIL, "source": EVIL,
                                        "user_stack": [{"filename": EVIL, "line": 1, "name": EVIL}]}, **c0})
    text += envelope({"link": {"name": EVIL, "url": "javascript:window.__pwned='link'"}, **c0})
    text += envelope({"link": {"name": "tab-split scheme", "url": "java\tscript:window.__pwned='link2'"}, **c0})
    text += envelope({"link": {"name": "data url", "url": "data:text/html,<script>window.__pwned='data'</script>"}, **c0})
    text += envelope({"link": {"name": "a fine link", "url": "https://example.com/?q=<script>"}, **c0})
    text += envelope({"compilation_metrics": {
        "co_name": EVIL, "co_filename": EVIL, "co_firstlineno": EVIL, "fail_type": EVIL, "fail_reason": EVIL,
        "fail_user_frame_filename": EVIL, "fail_user_frame_lineno": EVIL, "restart_reasons": [EVIL, EVIL],
        EVIL: EVIL, "graph_op_count": 1, "start_time": 1700000000.0,
    }, **c0})
    text += envelope({"dynamo_start": {"stack": [{"filename": 0, "line": 5, "name": EVIL}]}, **c1})
    text += envelope({"compilation_metrics": {"co_name": EVIL, "restart_reasons": EVIL}, **c1, "subgraph_name": EVIL})
    text += envelope({"chromium_event": {}}, json.dumps({"name": EVIL, "ts": 1700000000000000, "ph": "B", "cat": EVIL}))
    text += envelope({EVIL: {EVIL: EVIL}, **c0}, EVIL)
    text += envelope({"artifact": {"name": "outside", "encoding": "string"},
                      "stack": [{"filename": EVIL, "line": 1, "name": EVIL}]}, EVIL)
    text += f"not a trace line {EVIL}\n"
    text += envelope({"compilation_metrics": {"co_name": "x"}, **cid(2)}).replace("{", "{" + EVIL, 1)
    path = d / name
    path.write_text(text, encoding="utf-8")
    return path


def huge_payload_log(path: Path, size: int, line: bytes | None = None) -> int:
    """A log whose inductor_output_code payload is `size` bytes, written in chunks (never held whole).

    Returns the number of payload lines.
    """
    line = line or b"    buf0 = empty_strided_cpu((16, 16), (16, 1), torch.float32); del buf0  # generated code line"
    n = max(1, size // (len(line) + 1))
    digest = hashlib.md5()
    block = b"\n".join([line] * 1000)
    for start in range(0, n, 1000):
        k = min(1000, n - start)
        if start:
            digest.update(b"\n")
        digest.update(block if k == 1000 else b"\n".join([line] * k))
    prefix = b"V1121 09:58:36.209000 2267 torch/_inductor/graph.py:1] "
    with open(path, "wb") as f:
        f.write(prefix + json.dumps({"dynamo_start": {"stack": []}, **cid(0)}).encode() + b"\n")
        head = {"inductor_output_code": {"filename": "/tmp/torchinductor/huge.py"}, **cid(0), "has_payload": digest.hexdigest()}
        f.write(prefix + json.dumps(head).encode() + b"\n")
        tabbed = (b"\t" + line + b"\n") * 1000
        for start in range(0, n, 1000):
            k = min(1000, n - start)
            f.write(tabbed if k == 1000 else (b"\t" + line + b"\n") * k)
        f.write(prefix + json.dumps({"compilation_metrics": {"co_name": "huge", "graph_op_count": 1}, **cid(0)}).encode() + b"\n")
    return n

"""The line splitter: envelopes, payload continuation, and lines that are neither."""

import gzip
import hashlib
import io

from compilescope.ingest import lines
from compilescope.ingest.envelope import decode_envelope
from compilescope.ingest.handlers import KNOWN_KINDS
from compilescope.ingest.lines import GLOG_PREFIX, read_raw_records
from compilescope.ingest.reader import read_trace

from .conftest import record_calls, torch213

PREFIX = b"V1206 15:18:20.254000 1500233 torch/_dynamo/convert_frame.py:961] "


def records(data: bytes):
    return list(read_raw_records(io.BytesIO(data)))


def test_envelope_with_payload_and_md5():
    payload = b"line one\n  line two"
    md5 = hashlib.md5(payload).hexdigest().encode()
    data = PREFIX + b'{"dynamo_output_graph": {}, "frame_id": 0, "frame_compile_id": 1, "attempt": 0, "has_payload": "' + md5 + b'"}\n'
    data += b"\tline one\n\t  line two\n"
    (rec,) = records(data)
    assert rec.glog.pid == 1500233
    assert rec.glog.pathname == "torch/_dynamo/convert_frame.py"  # no leading space (tlparse has one)
    assert rec.glog.lineno == 961
    env = decode_envelope(rec, KNOWN_KINDS)
    assert env.kind == "dynamo_output_graph"
    assert env.md5_ok
    assert env.payload == "line one\n  line two"
    assert str(env.compile_id) == "[0/1]"


def test_md5_mismatch_is_detected_but_payload_kept():
    data = PREFIX + b'{"dynamo_output_graph": {}, "has_payload": "00000000000000000000000000000000"}\n\tx\n'
    env = decode_envelope(records(data)[0], KNOWN_KINDS)
    assert not env.md5_ok
    assert env.payload == "x"


def test_bad_prefix_and_orphan_payload_become_records():
    data = b"\torphan payload\nnot a log line\n" + PREFIX + b'{"str": ["a.py", 0]}\n'
    recs = records(data)
    assert [r.problem for r in recs] == ["orphan_payload", "bad_prefix", None]
    assert [r.lineno for r in recs] == [1, 2, 3]


def test_invalid_utf8_is_replaced_not_fatal():
    data = PREFIX + b'{"artifact": {"name": "x\xff", "encoding": "string"}, "has_payload": "0"}\n\tbad \xfe byte\n'
    env = decode_envelope(records(data)[0], KNOWN_KINDS)
    assert env.metadata["name"] == "x\ufffd"
    assert env.payload == "bad \ufffd byte"
    assert len(env.warnings) == 2


def test_compiled_autograd_compile_id_display():
    data = PREFIX + b'{"compiled_autograd_graph": {}, "compiled_autograd_id": 3, "frame_id": 1, "frame_compile_id": 0, "attempt": 2}\n'
    env = decode_envelope(records(data)[0], KNOWN_KINDS)
    assert str(env.compile_id) == "[!3/1/0_2]"
    assert env.compile_id.dir_name() == "3_1_0_2"


def test_compile_id_parts_are_exact_ints_whatever_was_seen_before():
    """from_context keeps one CompileId per distinct id; a bool (True == 1) or a float is never an id part,
    even after the same values as ints were seen, and a null id key still makes an (unknown) compile id."""
    from compilescope.model.ids import CompileId

    seen = CompileId.from_context({"frame_id": 1, "frame_compile_id": 0, "attempt": 1})
    assert str(seen) == "[1/0_1]"
    assert CompileId.from_context({"frame_id": 1, "frame_compile_id": 0, "attempt": 1}) is seen
    assert str(CompileId.from_context({"frame_id": True, "frame_compile_id": 0, "attempt": True})) == "[-/0]"
    assert str(CompileId.from_context({"frame_id": 1.0, "frame_compile_id": 0})) == "[-/0]"
    assert CompileId.from_context({"frame_id": None}) == CompileId(None, None, None, None)
    assert CompileId.from_context({"rank": 0}) is None
    assert CompileId.from_context({"frame_id": [1], "frame_compile_id": {}}) == CompileId(None, None, None, None)
    # The envelope's problems get one entry naming every part that is no counter, and nothing for a readable id.
    problems: list[tuple[str, str]] = []
    CompileId.from_context({"frame_id": 1, "frame_compile_id": 0, "attempt": 1}, problems)
    CompileId.from_context({"frame_id": 2, "frame_compile_id": 7}, problems)  # (not seen before: checked, then kept)
    assert problems == []
    CompileId.from_context({"frame_id": True, "frame_compile_id": 1.5}, problems)
    ((category, message),) = problems
    assert category == "bad_compile_id" and "frame_id=True, frame_compile_id=1.5;" in message


def test_payload_lines_keep_their_own_tabs_and_drop_only_the_leading_one(monkeypatch):
    """A run of payload lines is taken whole from a block: its TABs inside lines stay, CRLF ends and
    empty lines inside it go, and a run cut by the end of a block (any block size) reads the same."""
    import compilescope.ingest.lines as lines_module

    data = (PREFIX + b'{"str": ["a", 0]}\r\n\tdef f():\r\n\t\treturn\t1\r\n\r\n\t  x = "\\t"\n\n\t\n'
            + PREFIX + b'{"str": ["b", 1]}\n\tplain\n\tlines\n')
    expected = [(1, b"def f():\n\treturn\t1\n  x = \"\\t\"\n", 4), (8, b"plain\nlines", 2)]
    for chunk in (5, 64, 1 << 20):
        monkeypatch.setattr(lines_module, "CHUNK", chunk)
        assert [(r.lineno, r.payload_bytes(), r.payload_lines) for r in records(data)] == expected, chunk


def test_chromium_events_prefixes_are_not_parsed_to_renumber_their_compiles(monkeypatch):
    """The frame renumbering (resets.place) asks every compile record's pid, chromium events' too: the pid alone is
    read from the prefix, which stays unparsed where nothing else reads it (lazy prefix parsing's point)."""
    log = torch213("automatic_dynamic.log.gz")
    envelopes = [line for line in gzip.decompress(log.read_bytes()).split(b"\n") if GLOG_PREFIX.match(line)]
    chromium = [line for line in envelopes if b'] {"chromium_event"' in line]
    assert len(chromium) > len(envelopes) / 2  # (most of the log's records: what the check is about)
    parsed = record_calls(monkeypatch, lines, "_parse_prefix", lambda m: m[0])
    trace = read_trace(str(log))
    assert trace.n_compile_ids > 1  # (renumbering placed compile records)
    assert 0 < len(parsed) <= len(envelopes) - len(chromium)
    assert not [p for p in parsed if p in {line[:len(p)] for line in chromium}]


def test_a_block_is_not_copied_to_join_the_line_the_block_before_cut(monkeypatch):
    """Each block of the log is read where it lies: only the line the block before cut is joined to that block's
    start (a line's bytes), where joining the whole block to it copied every byte of the log once more. The records
    read are those of the whole log read as one block, whatever the block size and line ends (a wrong join shifts
    every later line number, or splits a line in two)."""
    log = gzip.decompress(torch213("compiled_optimizer.log.gz").read_bytes())
    joined: list[int] = []

    class Block(bytes):
        def __radd__(self, carry: bytes) -> bytes:  # carry + block (a bytes subclass's reflected add comes first)
            joined.append(len(carry) + len(self))
            return bytes(carry) + bytes(self)

    class Blocks(io.BytesIO):
        def read1(self, size: int = -1) -> bytes:
            return Block(super().read1(size))

    def read(stream: io.BytesIO) -> list[tuple]:
        return [(r.lineno, r.body, r.payload_bytes(), r.payload_lines, r.problem) for r in read_raw_records(stream)]

    assert len(log) > 4 * lines.CHUNK  # (blocks enough to see)
    in_blocks = read(Blocks(log))
    longest_line = max(len(line) for line in log.split(b"\n"))
    assert max(joined, default=0) <= longest_line + 1
    crlf = log.replace(b"\n", b"\r\n")
    monkeypatch.setattr(lines, "CHUNK", len(crlf) + 1)
    whole, whole_crlf = read(io.BytesIO(log)), read(io.BytesIO(crlf))
    assert in_blocks == whole and len(whole) > 400
    for chunk in (37, 4099):  # (blocks cutting envelopes, payload lines and CRLF pairs)
        monkeypatch.setattr(lines, "CHUNK", chunk)
        assert read(io.BytesIO(log)) == whole, chunk
        assert read(io.BytesIO(crlf)) == whole_crlf, chunk

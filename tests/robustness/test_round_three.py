"""Round three of issue 16 on real fixture logs: amplification (one record's content copied into
the report many times), a gzip input kept compressed, a deep value in one rank, forged md5s on
unknown kinds, and bidi or zero-width characters in names.

Commands run in a child with a memory cap and a time limit (test_round_two.compilescope).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path

from ..conftest import PEER_INPUTS, skip_or_fail, torch213
from .test_round_two import compilescope, report

EXPORT_DRAFT = torch213("export_draft.log")


def _dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _records(log: Path) -> tuple[list[str], dict[str, tuple[str, dict]]]:
    """The log's lines, and its first record of each kind as (glog prefix, envelope)."""
    lines = log.read_text().splitlines(keepends=True)
    first: dict[str, tuple[str, dict]] = {}
    for line in lines:
        prefix, sep, body = line.partition("] ")
        if sep and body.startswith("{"):
            env = json.loads(body)
            for kind in env:
                first.setdefault(kind, (prefix + sep, env))
    return lines, first


# 3. Amplification -----------------------------------------------------------------------------

def test_many_issues_about_one_wide_expression_cost_one_tree(tmp_path):
    # draft_export's real records, mutated: 900 expressions over u0, one wide expression over all
    # of them, and 400 data-dependent issues that all name the wide one.
    lines, first = _records(EXPORT_DRAFT)
    prefix, created = first["expression_created"]
    symbol_id = created["expression_created"]["argument_ids"][0]
    body = created["expression_created"]
    extra = []
    for i in range(900):
        extra.append(prefix + json.dumps({"expression_created": {**body, "result": f"u0 > {i}", "result_id": 10 + i,
                                                                "argument_ids": [symbol_id]}}) + "\n")
    wide = " + ".join(f"(u0 > {i})" for i in range(900))
    extra.append(prefix + json.dumps({"expression_created": {**body, "method": "add", "result": wide, "result_id": 5,
                                                            "arguments": [], "argument_ids": list(range(10, 910))}}) + "\n")
    issue_prefix, issue = first["propagate_real_tensors_provenance"]
    meta = {**issue["propagate_real_tensors_provenance"], "expr": "wide", "expr_node_id": 5}
    extra += [issue_prefix + json.dumps({"propagate_real_tensors_provenance": meta}) + "\n"] * 400
    at = next(i for i, line in enumerate(lines) if "exported_program" in line)
    log = tmp_path / "amplified.log"
    log.write_text("".join(lines[:at] + extra + lines[at:]))

    out = tmp_path / "out"
    report(log, out)
    page = (out / "index.html").read_text()
    # The fixture's own issue (2 nodes); the wide one, its 900 arguments and u0 under each (expanded
    # once, then "shown above"); then one line per later issue.
    assert page.count('class="expr-node') == 2 + 1 + 900 + 900 + 399
    assert page.count("expanded under") == 399 + 1  # and u0 first, expanded under the fixture's issue
    assert _dir_size(out) < 4 * log.stat().st_size + (1 << 20)


def test_a_gzip_log_is_kept_compressed(tmp_path):
    log = torch213("diff_base.log.gz")
    out = tmp_path / "out"
    report(log, out)
    assert (out / "raw.log.gz").read_bytes() == log.read_bytes()  # as stored, never expanded
    assert not (out / "raw.log").exists()
    plain = tmp_path / "plain"
    report(EXPORT_DRAFT, plain)
    assert (plain / "raw.log").read_bytes() == EXPORT_DRAFT.read_bytes()  # tlparse's name for a plain log


# Forged md5s on kinds this version does not know ---------------------------------------------

def test_a_forged_md5_on_an_unknown_kind_is_flagged_and_never_overwrites(tmp_path):
    # Two records of a kind no version knows, both claiming one md5 (the real exported program's),
    # with different payloads; a third with a genuine md5.
    lines, first = _records(EXPORT_DRAFT)
    prefix, program = first["exported_program"]
    forged = program["has_payload"]
    extra = []
    for i, text in enumerate(["first payload", "second payload"]):
        extra.append(prefix + json.dumps({"future_kind": {"n": i}, "has_payload": forged}) + "\n\t" + text + "\n")
    genuine = hashlib.md5(b"third payload").hexdigest()
    extra.append(prefix + json.dumps({"future_kind": {"n": 2}, "has_payload": genuine}) + "\n\tthird payload\n")
    log = tmp_path / "forged.log"
    log.write_text("".join(extra + lines))

    out = tmp_path / "out"
    r = report(log, out, "--strict")
    assert r.returncode != 0 and b"md5" in r.stderr  # --strict fails on them, and says why
    kept = sorted(p.read_text() for p in (out / "payloads").glob("*.txt") if "payload" in p.read_text())
    assert kept == ["first payload", "second payload", "third payload"]
    assert (out / "payloads" / f"{genuine}.txt").read_text() == "third payload"
    # raw.jsonl points each record at its own file.
    names = [json.loads(line).get("payload_filename") for line in (out / "raw.jsonl").read_text().splitlines()
             if "future_kind" in line]
    assert len(set(names)) == 3 and all((out / n).is_file() for n in names)


# A deep value in one rank's log ---------------------------------------------------------------

def _deep(n: int):
    value: object = 1
    for _ in range(n):
        value = [value]
    return value


def test_a_deeply_nested_value_costs_its_record_not_its_rank(tmp_path):
    source = PEER_INPUTS / "multi_rank_runtime"
    if not source.is_dir():
        skip_or_fail(f"{source} missing")
    ranks = tmp_path / "ranks"
    shutil.copytree(source, ranks)
    # Rank 1's first runtime estimate, with one op's value nested 253 deep. (The peer's log already
    # has a wrong md5 on it, counted and read anyway: so the only new problem is the nesting.)
    log = ranks / "dedicated_log_torch_trace_rank_1.log"
    lines = log.read_text().splitlines(keepends=True)
    i = next(i for i, line in enumerate(lines) if '"inductor_runtime_and_tensor_meta"' in line)
    j = i + 1
    while j < len(lines) and lines[j].startswith("\t"):
        j += 1
    payload = json.loads("".join(line[1:] for line in lines[i + 1:j]))
    payload["ops"][0]["type"] = _deep(253)
    lines[i + 1:j] = [f"\t{json.dumps(payload)}\n"]
    log.write_text("".join(lines))

    def rows(directory: Path) -> dict[int, dict]:
        r = compilescope("summary", "--json", directory)
        assert r.returncode == 0, r.stderr.decode()[-2000:]
        return {row["rank"]: row for row in json.loads(r.stdout)["ranks"]}

    before, after = rows(source), rows(ranks)
    assert sorted(after) == list(range(7))
    assert after[1]["error"] is None and after[1]["compile_ids"] == before[1]["compile_ids"]
    assert after[1]["parse_problems"] == before[1]["parse_problems"] + 1  # the bad record, counted
    out = tmp_path / "out"
    r = compilescope(ranks, "--all-ranks-html", "-o", out, "--no-browser")
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    assert (out / "rank_1" / "index.html").is_file()


# Bidi and zero-width characters in names ------------------------------------------------------

def test_bidi_and_zero_width_characters_in_names_are_shown_escaped(tmp_path):
    # graph_breaks.log with its user file and its function renamed: a right-to-left override
    # (Trojan Source) and a zero-width space, written raw into the log.
    data = torch213("graph_breaks.log").read_bytes()
    data = data.replace(b"graph_breaks.py", "gra\u202eph\u200b_breaks.py".encode())
    data = data.replace(b'"co_name": "f"', '"co_name": "f\u2066x\u200d"'.encode())
    log = tmp_path / "hostile.log"
    log.write_bytes(data)
    out = tmp_path / "out"
    report(log, out)
    pages = {p: p.read_text(encoding="utf-8") for p in out.rglob("*.html")}
    assert len(pages) > 3
    for page, text in pages.items():
        for char in "\u202e\u200b\u2066\u200d":
            assert char not in text, (page.relative_to(out), f"U+{ord(char):04X}")
    shown = "".join(pages.values())
    assert "gra\\u202eph\\u200b_breaks.py" in shown and "f\\u2066x\\u200d" in shown

    r = compilescope("summary", log)
    assert r.returncode in (0, 1), r.stderr.decode()[-2000:]
    text = r.stdout.decode()
    assert not any(char in text for char in "\u202e\u200b\u2066\u200d")
    assert "\\u202e" in text


def test_a_gzip_bomb_payload_is_kept_cut_with_a_note(tmp_path):
    # cache_cold.log's output code, padded to 200 MB of repeated lines, gzipped to well under 1 MB.
    lines = torch213("cache_cold.log").read_bytes().splitlines(keepends=True)
    i = next(i for i, line in enumerate(lines) if b'"inductor_output_code"' in line)
    j = i + 1
    while j < len(lines) and lines[j][:1] == b"\t":
        j += 1
    log = tmp_path / "bomb.log.gz"
    pad = b"\t# " + b"x" * 1000 + b"\n"
    with gzip.open(log, "wb", compresslevel=1) as f:  # (its md5 no longer matches: read anyway)
        f.writelines(lines[:j])
        for _ in range(200):
            f.write(pad * 1000)
        f.writelines(lines[j:])
    assert log.stat().st_size < 2 << 20

    out = tmp_path / "out"
    report(log, out)
    assert (out / "raw.log.gz").read_bytes() == log.read_bytes()
    # The payload kept (16 MB, the floor) twice (its page, payloads/): not 200 MB, let alone 400.
    assert _dir_size(out) < 4 * (32 << 20)
    directory = json.loads((out / "compile_directory.json").read_text())
    [code] = [a for entry in directory.values() for a in entry["artifacts"] if a["name"].startswith("inductor_output_code")]
    page = (out / code["url"]).read_text()
    assert "[compilescope: payload cut here:" in page and "the whole payload is in the log" in page
    assert "kept cut at" in (out / "index.html").read_text()  # and listed with the log's problems


def test_a_gzip_bomb_of_envelopes_is_read_up_to_a_bound(tmp_path):
    # cache_cold.log, then 200 envelopes of a kind no version knows, each with 1 MB of metadata.
    log = tmp_path / "bomb.log.gz"
    lines = torch213("cache_cold.log").read_bytes().splitlines(keepends=True)
    prefix = next(line for line in lines if line.startswith(b"V")).partition(b"] ")[0] + b"] "
    with gzip.open(log, "wb", compresslevel=1) as f:
        f.writelines(lines)
        for _ in range(200):
            f.write(prefix + json.dumps({"future_kind": {"text": "x" * (1 << 20)}}).encode() + b"\n")
    out = tmp_path / "out"
    report(log, out)
    assert _dir_size(out) < 80 << 20  # read up to 64 MB (the floor), not 200 MB
    assert "expands past" in (out / "index.html").read_text()  # where reading stopped, listed
    assert (out / "-_0_0_0").is_dir()  # the compile before it is all there

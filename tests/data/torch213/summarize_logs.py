#!/usr/bin/env python3
"""Print the facts README.md states about each log in logs/ (used to verify it).

    python3 tests/data/torch213/summarize_logs.py [logs/x.log ...]

Stdlib only; a deliberately naive, independent parser of the TORCH_TRACE format:
an envelope line is a glog prefix `<L><mmdd> <hh:mm:ss.us> <pid> <file>:<line>] `
followed by one JSON object; the payload (if `has_payload`) follows on lines
starting with a TAB.
"""
import collections
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ENVELOPE = re.compile(r"^[VIWEC]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ (\S+):(\d+)\] (\{.*\})$")


def parse(path):
    events = []  # (envelope dict, payload str | None, emitting file:line)
    cur = None
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("\t"):
            cur[1].append(line[1:])
            continue
        m = ENVELOPE.match(line)
        if not m:
            raise ValueError(f"{path}: unparsable line: {line[:120]}")
        cur = (json.loads(m.group(3)), [], f"{m.group(1)}:{m.group(2)}")
        events.append(cur)
    return [(e, "\n".join(p) if p else None, src) for e, p, src in events]


def kind_of(env):
    k = next(iter(env))
    return f"artifact:{env[k]['name']}" if k == "artifact" else k


def cid(env):
    if "frame_id" not in env:
        return None
    s = f"{env['frame_id']}/{env.get('frame_compile_id')}"
    if "compiled_autograd_id" in env:
        s = f"!{env['compiled_autograd_id']}/" + s
    return s + (f"_{env['attempt']}" if "attempt" in env else "")


def short(s, n=160):
    s = " ".join(str(s).split())
    return s if len(s) <= n else s[: n - 3] + "..."


def summarize(path):
    ev = parse(path)
    print(f"== {path.name}: {path.stat().st_size} bytes, {len(ev)} envelopes")
    keys = set()
    for e, _, _ in ev:
        keys |= set(e)
    print("top-level envelope keys:", ", ".join(sorted(keys)))
    kinds = collections.Counter(kind_of(e) for e, _, _ in ev)
    print("event kinds (count):", ", ".join(f"{k}={v}" for k, v in sorted(kinds.items())))
    ids = collections.Counter(c for c in (cid(e) for e, _, _ in ev) if c)
    print("compile ids [frame/compile_attempt] (envelopes):",
          ", ".join(f"{k}({v})" for k, v in sorted(ids.items())))
    print("envelopes without compile id:", sum(1 for e, _, _ in ev if cid(e) is None))

    gb = []
    for e, p, _ in ev:
        if kind_of(e) == "artifact:dynamo_graph_break_reason" and p:
            m = re.search(r"Graph break in user code at (\S+)", p)
            first = p.splitlines()
            reason = next((l for l in first if l.startswith("Graph Break Reason:")), "")
            where = m.group(1) if m else "?"
            gb.append((cid(e), where.rsplit("/", 1)[-1], reason.replace("Graph Break Reason: ", "")))
    if gb:
        print(f"graph breaks: {len(gb)} events, {len({(w, r) for _, w, r in gb})} distinct (file:line, reason):")
        for c, w, r in gb:
            print(f"   [{c}] {w}: {short(r, 100)}")

    for e, p, _ in ev:
        k = kind_of(e)
        if k in ("compilation_metrics", "bwd_compilation_metrics"):
            cm = e[k]
            print(f"{k} [{cid(e)}] co_name={cm.get('co_name')} "
                  f"recompile_reason={short(cm.get('recompile_reason'), 110)!s} "
                  f"fail_type={cm.get('fail_type')} fail_reason={short(cm.get('fail_reason'), 110)!s}")
        elif k == "artifact:recompile_reasons":
            print(f"recompile_reasons [{cid(e)}]: {short(p, 200)}")
        elif k in ("artifact:dynamo_error",):
            last = [l for l in (p or "").splitlines() if l.strip()]
            print(f"dynamo_error [{cid(e)}]: {short(last[-1] if last else None, 150)}")
        elif k in ("symbolic_shape_specialization",):
            print(f"symbolic_shape_specialization [{cid(e)}]: {e[k].get('symbol')}={e[k].get('value')} sources={e[k].get('sources')} reason={e[k].get('reason')}")
        elif k in ("create_symbol", "create_unbacked_symbol"):
            d = e[k]
            print(f"{k} [{cid(e)}]: {d.get('symbol')} val={d.get('val')} vr={d.get('vr')} source={d.get('source')}")
        elif k == "guard_added_fast" or k == "guard_added":
            print(f"{k} [{cid(e)}]: {e[k].get('expr')}")
        elif k.startswith("artifact:") and ("cache_hit" in k or "cache_miss" in k or "cache_bypass" in k):
            print(f"{k[9:]} [{cid(e)}]")
    print()


def main():
    paths = [Path(a) for a in sys.argv[1:]] or sorted((HERE / "logs").glob("*.log"))
    for p in paths:
        summarize(p)


if __name__ == "__main__":
    main()

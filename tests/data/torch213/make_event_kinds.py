#!/usr/bin/env python3
"""Regenerate EVENT_KINDS.md: every trace_structured / trace_structured_artifact /
dtrace_structured call site in the installed torch, grouped by event kind.

    python3 tests/data/torch213/make_event_kinds.py

Static analysis (ast) of site-packages/torch/**/*.py of whatever torch is
importable (expected: 2.13.0).  The "seen in logs" column is computed from
logs/*.log next to this file.
"""
import ast
import collections
import json
import os
import re
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
ROOT = Path(torch.__file__).resolve().parent
FUNCS = {"trace_structured", "trace_structured_artifact", "dtrace_structured"}

# Call sites whose kind / artifact name is computed at runtime: the values
# they can take, read from the surrounding torch 2.13 source by hand.
DYNAMIC = {
    ("_dynamo/utils.py", "name"): [
        "compilation_metrics", "bwd_compilation_metrics",
        "compilation_metrics_runtime", "bwd_compilation_metrics_runtime"],
    ("_functorch/_aot_autograd/aot_autograd_result.py",
     "'aot_forward_graph' if has_backward else 'aot_inference_graph'"): [
        "aot_forward_graph", "aot_inference_graph"],
    ("_functorch/_aot_autograd/graph_compile.py", "f'{structured_log_prefix_fn()}'"): [
        "aot_forward_graph_pre_saved_tensors_hooks",
        "aot_backward_graph_pre_saved_tensors_hooks",
        "aot_saved_tensors_hooks_pack <name>",
        "aot_saved_tensors_hooks_unpack <name>",
        "aot_forward_graph_pre_assert_saved_tensors_hooks",
        "aot_backward_graph_pre_assert_saved_tensors_hooks"],
}

# Artifact names computed at runtime: expression -> the names it produces.
DYNAMIC_ARTIFACT = {
    ("_inductor/compile_fx.py", "f'fx_graph_cache_{cache_state}'"): [
        "fx_graph_cache_hit", "fx_graph_cache_miss", "fx_graph_cache_bypass"],
    ("_functorch/_aot_autograd/autograd_cache.py", "f'aotautograd_cache_{cache_state}'"): [
        "aotautograd_cache_hit", "aotautograd_cache_miss", "aotautograd_cache_bypass"],
    ("_dynamo/convert_frame.py", "code.co_name + '_ORIGINAL_BYTECODE'"): [
        "<co_name>_ORIGINAL_BYTECODE"],
    ("_dynamo/convert_frame.py", "code.co_name + '_MODIFIED_BYTECODE'"): [
        "<co_name>_MODIFIED_BYTECODE"],
    ("_inductor/fx_passes/pre_grad.py", "f'{pattern_matcher_pass.pass_name}_pre_grad'"): [
        "<pass_name>_pre_grad"],
    ("_inductor/fx_passes/post_grad.py", "f'{pattern_matcher_pass.pass_name}_post_grad'"): [
        "<pass_name>_post_grad"],
    ("_inductor/fx_passes/group_batch_fusion.py", "name"): [
        "optimus_<RuleClass>", "cff_<RuleClass>"],
    ("_inductor/memory.py", "name"): ["<graph_being_compiled>_fused"],
    ("_dynamo/pgo.py", "f'get_{ty}_code_state'"): [
        "get_local_code_state", "get_remote_code_state"],
    ("_dynamo/pgo.py", "event_name"): [
        "put_remote_code_state", "put_extra_remote_code_state"],
    ("_inductor/comms_debug.py", "tname"): ["<tlparse_name>_ITERATIVE_RECOMPUTE_ERROR"],
}

# Metadata that is not a dict literal: (kind, file) -> description.
META_NOTES = {
    ("str", "torch/_logging/structured.py"): "`[string, id]` (string-interning table entry)",
    ("describe_storage", "torch/_subclasses/meta_utils.py"): "id, describer_id, size (computed dict)",
    ("describe_tensor", "torch/_subclasses/meta_utils.py"): "id, describer_id, ndim, dtype, device, size, stride, storage, is_leaf, ... (non-default MetaTensorDesc fields)",
    ("compilation_metrics", "torch/_dynamo/utils.py"): "all fields of `CompilationMetrics` (torch/_dynamo/utils.py)",
    ("bwd_compilation_metrics", "torch/_dynamo/utils.py"): "all fields of `CompilationMetrics` (torch/_dynamo/utils.py)",
    ("compilation_metrics_runtime", "torch/_dynamo/utils.py"): "all fields of `CompilationMetrics` (torch/_dynamo/utils.py)",
    ("bwd_compilation_metrics_runtime", "torch/_dynamo/utils.py"): "all fields of `CompilationMetrics` (torch/_dynamo/utils.py)",
}

# The generic forwarders inside torch/_logging/_internal.py itself.
FORWARDERS = {("_logging/_internal.py", "trace_structured_artifact"),
              ("_logging/_internal.py", "dtrace_structured")}


def kw(call, name):
    for k in call.keywords:
        if k.arg == name:
            return k.value
    return None


def dict_of(node, module):
    """The dict literal a metadata_fn returns, if statically visible."""
    if isinstance(node, ast.Lambda):
        node = node.body
    elif isinstance(node, ast.Name):
        for fd in ast.walk(module):
            if isinstance(fd, ast.FunctionDef) and fd.name == node.id:
                for r in ast.walk(fd):
                    if isinstance(r, ast.Return) and isinstance(r.value, ast.Dict):
                        return r.value
        return None
    return node if isinstance(node, ast.Dict) else None


def enclosing_function(module, call):
    best = None
    for fd in ast.walk(module):
        if isinstance(fd, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                fd.lineno <= call.lineno <= fd.end_lineno:
            if best is None or fd.lineno > best.lineno:
                best = fd
    return best


def resolve_param(fd, pname):
    """Literal values a parameter `pname` of function `fd` receives at its call
    sites anywhere in torch (matched by function name), plus its default."""
    params = [a.arg for a in fd.args.posonlyargs + fd.args.args]
    values = []
    defaults = fd.args.defaults
    if pname in params and defaults:
        i = params.index(pname) - (len(params) - len(defaults))
        if i >= 0 and lit(defaults[i]):
            values.append((lit(defaults[i]), "default"))
    for a, d in zip(fd.args.kwonlyargs, fd.args.kw_defaults):
        if a.arg == pname and d is not None and lit(d):
            values.append((lit(d), "default"))
    if pname not in params and pname not in [a.arg for a in fd.args.kwonlyargs]:
        return None
    idx = params.index(pname) if pname in params else None
    for path, module in MODULES:
        for c in ast.walk(module):
            if not isinstance(c, ast.Call):
                continue
            f = c.func
            cname = f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)
            if cname != fd.name:
                continue
            v = kw(c, pname)
            if v is None and idx is not None:
                off = 1 if params and params[0] in ("self", "cls") else 0
                if idx - off < len(c.args) and idx - off >= 0:
                    v = c.args[idx - off]
            if v is not None and lit(v):
                values.append((lit(v), f"torch/{path.relative_to(ROOT).as_posix()}:{c.lineno}"))
    return values


def lit(node):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def artifact_names(rel, module, call, expr_node, site):
    lv = lit(expr_node)
    if lv:
        return [f"artifact:{lv}"]
    expr = ast.unparse(expr_node)
    site["dynamic"] = expr
    if (rel, expr) in DYNAMIC_ARTIFACT:
        return [f"artifact:{n}" for n in DYNAMIC_ARTIFACT[(rel, expr)]]
    if isinstance(expr_node, ast.Name):
        fd = enclosing_function(module, call)
        vals = resolve_param(fd, expr_node.id) if fd is not None else None
        if vals:
            site["param_of"] = fd.name
            by = collections.defaultdict(list)
            for v, where in vals:
                by[v].append(where)
            site["resolved"] = {v: ws for v, ws in by.items()}
            return [f"artifact:{v}" for v in by]
    return [f"artifact:<{expr}>"]


def analyse(path, module, call, fname):
    rel = path.relative_to(ROOT).as_posix()
    args = call.args
    site = {"file": f"torch/{rel}", "line": call.lineno, "func": fname}
    first = args[0] if args else kw(call, "name")
    meta = None
    if fname == "trace_structured_artifact":
        names = artifact_names(rel, module, call, first, site)
        enc = args[1] if len(args) > 1 else kw(call, "encoding")
        meta_keys = ["name", "encoding"]
        site["encoding"] = lit(enc) or ast.unparse(enc)
        payload = (len(args) > 2) or kw(call, "payload_fn") is not None
        expr = ast.unparse(first)
    else:
        nm = lit(first)
        mfn = args[1] if len(args) > 1 else kw(call, "metadata_fn")
        meta = dict_of(mfn, module) if mfn is not None else None
        meta_keys = None
        if meta is not None:
            meta_keys = [lit(k) or (ast.unparse(k) if k else "**") for k in meta.keys]
        elif mfn is None:
            meta_keys = []
        names = None
        if nm == "artifact":
            names = ["artifact:?"]
            if meta is not None:
                for k, v in zip(meta.keys, meta.values):
                    if k is not None and lit(k) == "encoding":
                        site["encoding"] = lit(v) or ast.unparse(v)
                for k, v in zip(meta.keys, meta.values):
                    if k is not None and lit(k) == "name":
                        names = artifact_names(rel, module, call, v, site)
        elif nm is not None:
            names = [nm]
        payload = kw(call, "payload_fn") is not None
        expr = ast.unparse(first) if first is not None else "?"
    if names is None:
        names = DYNAMIC.get((rel, expr)) or [f"<dynamic: {expr}>"]
        site["dynamic"] = expr
    site["meta_keys"] = meta_keys
    site["payload"] = payload

    sc = kw(call, "suppress_context")
    cid = kw(call, "compile_id")
    eti = kw(call, "expect_trace_id")
    default_eti = fname != "dtrace_structured"
    if sc is not None and not (isinstance(sc, ast.Constant) and sc.value is False):
        ctx = "none (suppress_context=True)" if isinstance(sc, ast.Constant) else f"depends (suppress_context={ast.unparse(sc)})"
    else:
        parts = []
        if cid is not None:
            parts.append("frame_id, frame_compile_id[, compiled_autograd_id] from compile_id= arg (else current compile); attempt if inside a compile")
        else:
            parts.append("frame_id, frame_compile_id, attempt[, compiled_autograd_id] of the current compile, if any")
        e = default_eti if eti is None else (eti.value if isinstance(eti, ast.Constant) else None)
        if e is True and cid is None:
            parts.append("'stack' instead when emitted outside any compile")
        elif e is True:
            parts.append("'stack' when neither a compile nor compile_id")
        elif e is None:
            parts.append(f"'stack' if expect_trace_id ({ast.unparse(eti)}) and outside a compile")
        ctx = "; ".join(parts)
    site["context"] = ctx
    if fname == "dtrace_structured":
        site["context"] += " (emitted only under TORCH_DTRACE / draft_export capture)"
    return names, site


MODULES = []  # (path, ast.Module) of every torch/**/*.py


def load_modules():
    for dp, dirs, files in os.walk(ROOT):
        dirs.sort()
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            path = Path(dp) / f
            try:
                src = path.read_text(encoding="utf-8")
                MODULES.append((path, ast.parse(src)))
            except (UnicodeDecodeError, OSError, SyntaxError):
                continue


def collect():
    by_kind = collections.defaultdict(list)
    forwarders = []
    n = 0
    for path, module in MODULES:
            rel = path.relative_to(ROOT).as_posix()
            for node in ast.walk(module):
                if not isinstance(node, ast.Call):
                    continue
                fn = node.func
                name = fn.id if isinstance(fn, ast.Name) else getattr(fn, "attr", None)
                if name in FUNCS:
                    n += 1
                    fd = enclosing_function(module, node)
                    if fd is not None and (rel, fd.name) in FORWARDERS:
                        forwarders.append((f"torch/{rel}:{node.lineno}", fd.name, name))
                        continue
                    names, site = analyse(path, module, node, name)
                    for k in names:
                        by_kind[k].append(site)
    return by_kind, n, forwarders


def seen_in_logs():
    env_re = re.compile(r"^[VIWEC]\d{4} \S+ +\d+ \S+\] (\{.*\})$")
    seen = collections.defaultdict(set)
    for log in sorted((HERE / "logs").glob("*.log")):
        for line in open(log, encoding="utf-8"):
            m = env_re.match(line.rstrip("\n"))
            if not m:
                continue
            d = json.loads(m.group(1))
            k = next(iter(d))
            if k == "artifact":
                k = f"artifact:{d[k]['name']}"
            seen[k].add(log.stem)
    return seen


def template_regex(kind):
    """`artifact:<co_name>_ORIGINAL_BYTECODE` -> regex matching concrete names."""
    parts = re.split(r"<[^>]*>", kind)
    return re.compile("^" + ".+".join(re.escape(p) for p in parts) + "$")


def main():
    load_modules()
    by_kind, n, forwarders = collect()
    seen_exact = seen_in_logs()
    seen = collections.defaultdict(set)
    concrete = collections.defaultdict(set)  # template kind -> concrete names seen
    for k, logs in seen_exact.items():
        if k in by_kind:
            seen[k] |= logs
            continue
        for t in by_kind:
            if "<" in t and template_regex(t).match(k):
                seen[t] |= logs
                concrete[t].add(k)
    sites = sum(len(v) for v in by_kind.values())
    out = []
    w = out.append
    w(f"# Structured trace event kinds in torch {torch.__version__}\n")
    w("Generated by `make_event_kinds.py` (static `ast` scan of the installed "
      "`torch/**/*.py`; do not edit by hand).  ")
    w(f"{n} call sites of `trace_structured(`, `trace_structured_artifact(` and "
      f"`dtrace_structured(` (definitions excluded; {len(forwarders)} of them are the generic "
      f"forwarders inside `torch/_logging/_internal.py`, listed at the end); "
      f"{len(by_kind)} event kinds (`<...>` marks a part of a name computed at runtime).\n")
    w("## How an envelope is built (torch/_logging/_internal.py `trace_structured`)\n")
    w("- One glog-style line `V<mmdd> <time> <pid> <file>:<line>] {json}`; the JSON's "
      "**first key is the event kind** and its value is the metadata dict "
      "(`\"str\"` is special: its value is `[string, id]` for string interning).")
    w("- `artifact` events are kind `artifact` with metadata `{\"name\", \"encoding\"}`; "
      "below they are listed as `artifact:<name>`.  `trace_structured_artifact(name, encoding, payload_fn)` "
      "is a shorthand for exactly that.")
    w("- Context keys added after the metadata unless `suppress_context=True`: "
      "`rank` (if torch.distributed is initialized), `compiled_autograd_id`, `frame_id`, "
      "`frame_compile_id` (from the current CompileContext trace id, or the `compile_id=` argument), "
      "`attempt` (only when there is a current trace id), or `stack` "
      "(a framework traceback) when `expect_trace_id` is true but there is neither a trace id nor "
      "a `compile_id`; `subgraph_name` inside regional inductor.")
    w("- `has_payload` (md5 of the payload) is added iff `payload_fn()` returns non-None; the payload "
      "follows on TAB-indented lines.  Non-str payloads are `json.dumps(..., indent=0)`; lists are "
      "rendered as `[\\n` + one JSON item per line + `\\n]`.")
    w("- `dtrace_structured(...)` forwards to `trace_structured` (default `expect_trace_id=False`) "
      "only when `TORCH_DTRACE` is set (or inside `torch.export.draft_export`, which captures its "
      "own filtered trace).\n")
    w("Columns: **payload** = a `payload_fn` is passed (it may still return None at runtime); "
      "**metadata keys** = keys of the dict literal the `metadata_fn` returns, when statically "
      "visible (`?` = computed).  **seen in logs** = fixture logs in `logs/` that contain the kind.\n")

    w("## Index\n")
    w("| kind | sites | payload | seen in logs |")
    w("| --- | --- | --- | --- |")
    for k in sorted(by_kind):
        pl = {s["payload"] for s in by_kind[k]}
        pls = "yes" if pl == {True} else "no" if pl == {False} else "some sites"
        seen_s = ", ".join(sorted(seen.get(k, ()))) or "-"
        if concrete.get(k):
            seen_s += " (as " + ", ".join(f"`{c}`" for c in sorted(concrete[k])) + ")"
        w(f"| `{k}` | {len(by_kind[k])} | {pls} | {seen_s} |")
    unlisted = sorted(k for k in seen_exact if k not in by_kind
                      and not any(k in c for c in concrete.values()))
    if unlisted:
        w("")
        w("Kinds seen in the logs with no literal call site above (names built at runtime): "
          + ", ".join(f"`{k}`" for k in unlisted) + "\n")
    w("")
    w("## Call sites by kind\n")
    for k in sorted(by_kind):
        w(f"### `{k}`\n")
        w("| file:line | via | payload | metadata keys | context keys |")
        w("| --- | --- | --- | --- | --- |")
        for s in sorted(by_kind[k], key=lambda s: (s["file"], s["line"])):
            mk = "?" if s["meta_keys"] is None else (", ".join(s["meta_keys"]) or "(empty)")
            via = s["func"] + (f" (name expr `{s['dynamic']}`" if "dynamic" in s else "")
            if "param_of" in s:
                via += f", a parameter of `{s['param_of']}`"
            if "dynamic" in s:
                via += ")"
            if s["meta_keys"] is None and (k, s["file"]) in META_NOTES:
                mk = META_NOTES[(k, s["file"])]
            if "encoding" in s:
                mk += f" (encoding {s['encoding']})"
            if k.removeprefix("artifact:") in s.get("resolved", {}):
                via += "; value passed at " + ", ".join(s["resolved"][k.removeprefix("artifact:")])
            w(f"| {s['file']}:{s['line']} | {via} | {'yes' if s['payload'] else 'no'} | {mk} | {s['context']} |")
        w("")
    w("## Generic forwarders (not kinds of their own)\n")
    for where, fd, fn in forwarders:
        w(f"- {where}: `{fn}(` inside `{fd}` (forwards its caller's name/metadata/payload)")
    w("")
    (HERE / "EVENT_KINDS.md").write_text("\n".join(out) + "\n", encoding="utf-8")
    print(f"wrote EVENT_KINDS.md: {n} call sites, {sites} (site, kind) rows, {len(by_kind)} kinds")


if __name__ == "__main__":
    main()

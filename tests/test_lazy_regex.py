"""lazy_regex.lazy_compile: a pattern compiled on first use behaves as re.compile's, and a plain report of a log
without provenance, graph breaks or compiler diagnostics never compiles those patterns (start-up time)."""

from __future__ import annotations

import re

from compilescope.lazy_regex import lazy_compile

from .conftest import torch213
from .test_cli import _report_in_a_new_process


def test_a_lazy_pattern_matches_as_the_compiled_one():
    source, flags = r"^Graph break in user code at (?P<file>.+):(?P<line>\d{1,9}+)\s*$", re.M
    lazy, compiled = lazy_compile(source, flags), re.compile(source, flags)
    assert "match" not in vars(lazy)  # not compiled yet
    text = "x\nGraph break in user code at /a/b.py:12\ny"
    assert lazy.search(text).groupdict() == compiled.search(text).groupdict() == {"file": "/a/b.py", "line": "12"}
    assert vars(lazy)["match"].__self__ is vars(lazy)["search"].__self__  # compiled once, its own methods kept
    assert (lazy.pattern, lazy.flags, lazy.groups, lazy.groupindex) == \
        (compiled.pattern, compiled.flags, compiled.groups, compiled.groupindex)
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in compiled.finditer(text)]
    assert lazy.sub("-", text) == compiled.sub("-", text) and lazy.split(text) == compiled.split(text)
    assert lazy.fullmatch("Graph break in user code at f:1") and lazy.findall(text) == compiled.findall(text)
    controls = lazy_compile(rb"[\x00-\x08]")
    assert controls.sub(b"?", b"a\x01b") == b"a?b"


# Patterns only some logs need: a plain report of a log that needs none of them compiles none. A new eager
# re.compile of one of these (or a use on every log) fails here.
LAZY_FOR_A_SMALL_LOG = (
    # (not fx_sites.FX_SOURCE_COMMENT: the one `# File:` pattern, which fx_node_sites reads every graph dump with)
    "compilescope.analyses.provenance.stack_traces._FRAME",
    "compilescope.analyses.provenance.line_mappings._NODE_OP", "compilescope.analyses.provenance.inferred_nodes._KERNEL_OPS",
    "compilescope.analyses.graph_breaks.reason_text.BREAK_HEADER",
    "compilescope.analyses.graph_breaks.reason_text._DOCS",
    "compilescope.analyses.compile_errors._QUOTED_SOURCE", "compilescope.analyses.compile_errors._CARET",
    "compilescope.analyses.installed_guards.GUARD_LINE",  # (a guard tree's line holding a newline)
    "compilescope.analyses.installed_guards._SITE_TAIL",  # (a guard tree: each of its lines is searched for a site)
    "compilescope.analyses.installed_guards._UNCLOSED_SITE_TAIL",  # (a guard line over 1 KB not ending in `)`)
    "compilescope.analyses.installed_guards._TYPE",
    "compilescope.analyses.insights.graph_breaks_and_recompiles.TENSOR_NAME",
    "compilescope.analyses.user_locations._INLINE_FRAME", "compilescope.analyses.transformed._COMPILED_FN",
    "compilescope.ingest.envelope._CONTROL", "compilescope.model.stats._CONTROL",
    "compilescope.render.options._MD5", "compilescope.render.options._URL_IGNORED",
    "compilescope.invisible._NOT_ON_A_TERMINAL",  # (what a report prints is printable: "… 3 more" too)
    "compilescope.analyses.recompiles.SIZE_GUARD", "compilescope.analyses.user_locations.FRAME_SOURCE",
    "compilescope.analyses.user_locations._TORCH_CHECKOUT",  # (torch installed: a source checkout's pattern is not needed)
    "compilescope.analyses.recompiles.placement._NUMBER_GUARD",  # (a log that recompiles)
    "compilescope.analyses.torch_warnings._WONT_CONVERT", "compilescope.analyses.torch_warnings._GENERATED_CODE",
    "compilescope.ingest.stderr._GLOG", "compilescope.ingest.stderr._COMPILE_ID",  # (a saved stderr beside the log)
    "compilescope.ingest.stderr._ARTIFACT_TAG", "compilescope.ingest.stderr._PY_WARNING",
    "compilescope.model.trace._EVAL_WITH_KEY",
    "compilescope.analyses.activation_checkpoint._RECOMPUTE_COMMENT",  # (a log that recomputes checkpointed ops)
    "compilescope.analyses.activation_checkpoint._OP_NODE", "compilescope.analyses.autotuning._TYPED_DEVICE",
    "compilescope.analyses.caches._FUNCTION_TARGET", "compilescope.analyses.export._RANGE",
    "compilescope.analyses.export._BOUND", "compilescope.analyses.freezing._ARG", "compilescope.analyses.freezing._PARAM_INPUT",
    "compilescope.analyses.freezing._NUMBERED", "compilescope.analyses.freezing._WORD",  # (a frozen graph)
    "compilescope.analyses.fx_sites._TYPED_NAME", "compilescope.analyses.fx_sites._CALL",
    "compilescope.analyses.freezing._CONSTANT", "compilescope.analyses.freezing._OP_CALL",
    # (a ModuleList's blocks compiled alike)
    *(f"compilescope.analyses.repeated_blocks.{name}" for name in ("_INPUT", "_NUMBERED", "_LINE",
                                                                   "_BLOCK_INPUT", "_OTHER_WEIGHT", "_IDENTIFIER")),
    "compilescope.analyses.installed_guards._NUMBERED_MODULE",
    # (a guard of a code object; a dimension marked dynamic)
    "compilescope.analyses.installed_guards._CODE_FILE", "compilescope.analyses.installed_guards._MARKED_DIMS",
    # (a line a file ends otherwise than splitlines() does; a typed graph node; a cache key's is_backward; a mode or
    # requires_grad guard that failed; an fsspec chain; a rank's log; a crash file beside a log)
    "compilescope.location._LINE_END", "compilescope.analyses.fx_sites.FX_NODE", "compilescope.analyses.caches._IS_BACKWARD",
    "compilescope.analyses.state_lines._TRAINING_GUARD", "compilescope.analyses.state_lines._REQUIRES_GRAD_EXPECTED",
    "compilescope.location._CHAIN", "compilescope.ingest.discover.RANK_LOG", "compilescope.ingest.crash_files.CRASH_FILE",
    # (output code with a user's Triton kernel)
    *(f"compilescope.analyses.user_kernels.{name}" for name in ("_OPENER", "_ORIGINAL_PATH", "_DEBUG_HANDLE", "_RUN",
                                                                "_SIGNATURE", "_SIGNATURE_ITEM", "_NUMBER", "_SIZE_SYMBOL",
                                                                "_OPS_CALL")),
    # (a dtype recompile of a model's parameters; a compiled frame that is a library's wrapper of the user's model)
    "compilescope.analyses.recompiles.models._SELF_PARAMETER", "compilescope.analyses.recompiles.models._SELF_CLASS",
    "compilescope.analyses.compiled_frames._SELF",
    "compilescope.analyses.compiled_frames._KEYWORD",
    # (a wrapper frame passing its arguments on to the user's function: torch.no_grad's decorator)
    "compilescope.analyses.compiled_frames._POSITIONAL", "compilescope.analyses.compiled_frames._PASSES_ON",
)


def _compiled(patterns: tuple[str, ...]) -> str:
    """The expression _report_in_a_new_process evaluates: which of the patterns were compiled (a re.Pattern, made
    eagerly, counts as compiled; a module never imported compiled none)."""
    names = ", ".join(repr(name.rpartition(".")) for name in patterns)
    return (f"sorted(m + '.' + n for m, _, n in [{names}] "
            "if m in sys.modules and 'match' in getattr(getattr(sys.modules[m], n, None), '__dict__', ('match',)))")


def test_a_plain_report_compiles_only_the_patterns_its_log_needs(tmp_path):
    compiled = _compiled(LAZY_FOR_A_SMALL_LOG)
    assert _report_in_a_new_process(torch213("compile_error_lowering.log"), tmp_path / "out", compiled) == "0 []"


def test_a_report_of_a_log_without_a_traceback_compiles_no_frame_pattern(tmp_path):
    """(compile_error_lowering's error quotes a traceback: training.log, which has none, reads no frame of one)"""
    compiled = _compiled(("compilescope.analyses.user_locations.TRACEBACK_FRAME",
                          "compilescope.analyses.compile_errors._LOWERING_TARGET"))  # (no failed lowering either)
    assert _report_in_a_new_process(torch213("training.log"), tmp_path / "out", compiled) == "0 []"


# Patterns a fixed string of theirs rules out first: compiled_optimizer.log's two graph breaks (Adam.step force-skipped
# by lr_scheduler.py, torch's own graph_break()) are restarts whose reasons name no torch.amp function (no
# MOD_SKIPLIST in the log) and are no restart of Dynamo's own (no "RestartAnalysis'>"), and its one warning (the
# profiler's record function) is no fail_on_recompile refusal (no "Detected recompile"): their patterns stay uncompiled.
PRECHECKED = ("compilescope.analyses.graph_breaks.wording._AMP_SKIPPED",
              "compilescope.analyses.graph_breaks.reason_text._INTERNAL_RESTART",
              "compilescope.analyses.torch_warnings._REFUSAL")


def test_a_fixed_string_keeps_the_patterns_of_what_a_log_lacks_uncompiled(tmp_path):
    names = ", ".join(repr(name.rpartition(".")) for name in PRECHECKED)
    compiled = (f"sorted(m + '.' + n for m, _, n in [{names}] "
                "if 'match' in getattr(getattr(sys.modules[m], n, None), '__dict__', ('match',)))")
    assert _report_in_a_new_process(torch213("compiled_optimizer.log.gz"), tmp_path / "out", compiled) == "0 []"


def test_the_terminal_guard_passes_plain_ascii_unchanged_and_escapes_the_rest_as_before():
    """safe_terminal_text skips its pattern for printable ASCII with newlines and tabs: exactly the texts the
    pattern leaves as they are (every other character, alone or beside others, still goes through it)."""
    from compilescope import invisible

    texts = [f"a{chr(c)}b\n" for c in range(0x100)] + ["\u202eevil\u200b", "\x1b[31mred\x1b[0m", "\x1b]52;c;x\x07",
                                                      "tab\there\nnext", "", "\x7f", "plain text"]
    for text in texts:
        assert invisible.safe_terminal_text(text) == invisible._NOT_ON_A_TERMINAL.sub(invisible._visible, text), text
    assert invisible.safe_terminal_text("a\x1bb") == "a\\u001bb"


def test_printable_text_of_any_script_skips_the_invisible_patterns_and_reads_as_before():
    """The three escapers skip their pattern for a text str.isprintable() accepts, ASCII or not: no character
    their classes hold is printable, so each code point, alone and beside printable and unprintable ones, reads as
    the pattern reads it."""
    from compilescope import invisible

    one_line_pattern = invisible._NOT_IN_ONE_LINE
    for code in range(0x110000):
        char = chr(code)
        for text in (char, f"…{char}\n", f"x{char}"):
            assert invisible.safe_terminal_text(text) == invisible._NOT_ON_A_TERMINAL.sub(invisible._visible, text)
            assert invisible.one_line(text) == one_line_pattern.sub(invisible._visible, text)
            assert invisible.shown_in_html(text) == invisible._NOT_SHOWN_IN_HTML.sub(invisible._shown_in_html, text)
    assert invisible.shown_in_html("…\u202e×") == "…\\u202e×" and invisible.one_line("a…\nb") == "a…\\u000ab"
    assert invisible.safe_terminal_text("→ \u200bx") == "→ \\u200bx"


def test_a_report_of_a_log_whose_guards_name_self_and_no_numbered_block_compiles_neither_pattern(tmp_path):
    """training.log's trees guard L['self'] (a Tiny) and L['self']._modules['lin']: its wrapper local is read with str
    methods, and no `._modules['<digit>` asks for the numbered blocks' pattern."""
    compiled = _compiled(("compilescope.analyses.installed_guards._WRAPPER_LOCAL",
                          "compilescope.analyses.installed_guards._NUMBERED_MODULE"))
    assert _report_in_a_new_process(torch213("training.log"), tmp_path / "out", compiled) == "0 []"


def test_a_wrapper_local_is_read_as_its_pattern_reads_it():
    """installed_guards._wrapper_local gives what _WRAPPER_LOCAL.search gives, on the real trees' lines that name a
    wrapper's local and on lines the str reading leaves to the pattern."""
    import gzip

    from compilescope.analyses import installed_guards as guards

    lines = set()
    for name in ("training.log", "hf_llama.log.gz", "module_swap_hook.log.gz", "one_model_cast.log.gz",
                 "regional_blocks.log.gz", "nograd_wrapped.log.gz"):
        path = torch213(name)
        text = (gzip.open(path, "rt") if name.endswith(".gz") else open(path)).read()
        lines.update(line for line in text.splitlines() if "source=L['" in line)
    lines.update([
        "| +- GuardManager: source=L['self'], accessed_by=X, type=<class '__main__.f.<locals>.M'>, x type=<class 'a.B'>",
        "GuardManager: source=L['fn'], accessed_by=X, type=<class '...'>", "GuardManager: source=L['func'], type=<class ''>",
        "GuardManager: source=L['args'][0], accessed_by=" + "x" * 300 + ", type=<class 'a.B'>",
        "GuardManager: source=L['args'][0], accessed_by=" + "x" * 298 + ", type=<class 'a.B'>",
        "GuardManager: source=L['self'], type=<class '" + "a" * 301 + "'>", "GuardManager: source=L['self'], type=<class 'é.B'>",
        "GuardManager: source=L['self'], a\nb type=<class 'a.B'>", "GuardManager: source=L['self'], type=<class 'a.B'",
        "source=L['self'], type=<class 'a.B'>", "x GuardManager: source=L['self'].x, GuardManager: source=L['fn'], "
        "type=<class 'a.B'>"])
    named = 0
    for line in lines:
        at = line.find("source=L['")
        if at < 0 or not line.startswith(guards._WRAPPER_LOCAL_NAMES, at + len("source=L['")):
            continue
        m = guards._WRAPPER_LOCAL.search(line, at - len("GuardManager: "))
        assert guards._wrapper_local(line, at) == (None if m is None else (m["source"], m["cls"])), line
        named += m is not None
    assert named >= 8

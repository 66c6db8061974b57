"""The warnings torch printed to stderr only: what it said, where in the user's code, and what to do.

torch says some important things on stderr and never in the TORCH_TRACE log: that float32 matmuls run without TF32
tensor cores, that CUDA graphs cannot replay while a backward is pending, that Inductor has no code for complex
operators, that a function hit the recompile limit. `compilescope run` and `capture()` write each one into the log
as a `compilescope_warning` artifact (bytecode_capture.py); this groups them and says what each known one means.

A plain TORCH_TRACE log has none of them. When the run's stderr was saved beside its log (`output.txt`), the
warnings are read from there instead (ingest/stderr.py): then without the user's line, unless torch printed one.
"""

from __future__ import annotations

import re
from dataclasses import field
from typing import Any

import orjson

from ..decompile.recorded import RECORDERS, WARNING
from ..lazy_regex import lazy_compile
from ..model.ids import NO_COMPILE_ID
from ..model.records import dataclass
from ..model.trace import Trace
from ..wording import cut_at_word
from .user_locations import UserLocation, is_framework_file, traceback_frames

# What a warning torch prints means, for the ones a user can act on: (words in the message, short name, advice).
# The short name titles the finding; the recompile limit has one already (insights: "hit the recompile limit").
RECOMPILE_LIMIT = "a function hit the recompile limit"
PENDING_BACKWARD = "CUDA graphs could not replay: a backward was still pending"
NO_TF32 = "float32 matmuls run without TF32 tensor cores"
COND_ONE_BRANCH = "torch.cond kept one branch only"
AUTOTUNE_CANDIDATE_FAILED = "a max-autotune candidate failed to compile"
WONT_CONVERT = "a function runs uncompiled: its compile failed"
ITEM_BREAK = "Tensor.item() breaks the graph"
HEADLINE_SHOWN = 240  # characters of a warning's first line a table of them shows (the report has it whole)
_PENDING_ADVICE = ("a compiled call ran while outputs of the previous one still waited for their backward; call "
                   "torch.compiler.cudagraph_mark_step_begin() before each step, or run inference under torch.no_grad()")
_RECOMPILE_ADVICE = "see Recompiles: the guard that kept failing, and what to mark dynamic"
KNOWN: tuple[tuple[str, str, str], ...] = (
    ("TensorFloat32 tensor cores", NO_TF32,
     "torch.set_float32_matmul_precision('high') lets them use TF32 (10 bits of mantissa instead of 23), "
     "usually much faster on Ampere and newer GPUs"),
    ("pending, uninvoked backwards", PENDING_BACKWARD, _PENDING_ADVICE),  # torch 2.11
    ("outputs from a previous step still require backward", PENDING_BACKWARD, _PENDING_ADVICE),  # torch 2.13
    ("does not support code generation for complex operators", "complex operators run as eager kernels",
     "Inductor generates no code for complex tensors: their operators fall back to eager, and fusion stops there; "
     "torch.view_as_real inside the compiled function lets Inductor generate code for them"),
    ("hit config.recompile_limit", RECOMPILE_LIMIT, _RECOMPILE_ADVICE),
    ("hit config.cache_size_limit", RECOMPILE_LIMIT, _RECOMPILE_ADVICE),  # the limit's name before torch 2.7
    ("Pred is a Python constant", COND_ONE_BRANCH,
     "a Python bool as torch.cond's predicate is specialized on; a boolean tensor keeps both branches"),
    ("WON'T CONVERT", WONT_CONVERT,  # torch._dynamo.config.suppress_errors: the frame falls back to eager
     "torch._dynamo.config.suppress_errors let it run eagerly instead of raising (Errors has the compile's error)"),
    ("Graph break from `Tensor.item()`", ITEM_BREAK,
     "torch._dynamo.config.capture_scalar_outputs = True keeps .item() in the graph (Graph breaks has every break)"),
    ("No valid triton configs", AUTOTUNE_CANDIDATE_FAILED,  # logged by torch/_inductor/select_algorithm.py
     "max-autotune leaves that candidate out and chooses among the others (Autotuning lists what failed, and why)"),
    ("`functools.lru_cache`-wrapped", "an lru_cache function is traced through its cache",
     "Dynamo ignores the cache and traces the function itself, so the compiled code computes what eager took from "
     "the cache, and a result that depends on state the cache hid may differ; call it outside the compiled function "
     "and pass the result in, if the cache matters"),
    ("Not enough SMs to use max_autotune_gemm mode", "max-autotune cannot tune matmuls on this GPU",
     "Inductor's matmul templates need 68 SMs or more (an RTX 3080's), and this GPU has fewer: matmuls keep the "
     "default kernels, so mode=\"max-autotune\" only tunes the other kernels here"),
    ("GPU arch does not support max_autotune_gemm mode", "max-autotune cannot tune matmuls on this GPU",
     "Inductor has no matmul templates for this GPU architecture: matmuls keep the default kernels, so "
     "mode=\"max-autotune\" only tunes the other kernels here"),
)


@dataclass
class TorchWarning:
    """One warning torch printed, with every time it printed it."""

    message: str
    kind: str  # the warning's class ("UserWarning") or the log record's level ("WARNING", "ERROR")
    source: str  # where torch warned: "torch/_inductor/lowering.py:2633"
    count: int = 1
    compile_ids: list[str] = field(default_factory=list)  # the compiles it was printed in (none: outside any, or not said)
    # The user's line that led to it: the innermost of a traceback in the message, else of the code Dynamo was
    # tracing, else of the code that was running.
    location: UserLocation | None = None
    logger: str | None = None  # the torch logger of a log record
    name: str | None = None  # what it means, in a few words (a known warning)
    advice: str | None = None  # what to do (a known warning)
    # Not printed: an error torch raised and the program caught, recorded by compilescope because torch logs nothing
    # of it (a recompile set_stance("fail_on_recompile") refused: its record names the stance). Said apart from the
    # warnings, as what it is.
    raised: bool = False
    # The compile id of the failed compile whose error this warning reports (a backward error torch's anomaly mode
    # printed while AOTAutograd traced the backward): said with that failure, not as a warning of its own.
    failure: str | None = None

    @property
    def headline(self) -> str:
        """The message's first line."""
        return self.message.strip().splitlines()[0] if self.message.strip() else ""

    @property
    def headline_shown(self) -> str:
        """Its first line as a table of warnings shows it: up to HEADLINE_SHOWN characters, cut between words (the
        report's page has it whole)."""
        return cut_at_word(self.headline, HEADLINE_SHOWN)

    @property
    def label(self) -> str:
        """What it is, in a line: the known warning's name, else its first line."""
        return self.name or self.headline

    @property
    def more(self) -> str:
        """The message after its first line (a traceback, say)."""
        parts = self.message.strip().split("\n", 1)
        return parts[1] if len(parts) > 1 else ""

    def to_json(self) -> dict[str, Any]:
        return {"message": self.message, "kind": self.kind, "source": self.source, "count": self.count,
                "compile_ids": self.compile_ids, "location": self.location.to_json() if self.location else None,
                "logger": self.logger, "name": self.name, "advice": self.advice, "raised": self.raised,
                "failure": self.failure}


@dataclass
class TorchWarnings:
    """The warnings torch printed, in the order they first appeared (none: a plain TORCH_TRACE log)."""

    warnings: list[TorchWarning] = field(default_factory=list)
    unreadable: int = 0  # recorded warnings whose payload could not be read
    stderr: str | None = None  # read from this saved stderr beside the log (None: recorded in the log)
    # The run recorded what torch printed (compilescope's hook ran, or its stderr was saved), so no warning means
    # none was printed; False: a plain log, which cannot say
    recorded: bool = False

    def __bool__(self) -> bool:
        return bool(self.warnings)

    @property
    def stderr_name(self) -> str | None:
        """The saved stderr's file name: it lies beside the log, so its directory says nothing the log's path does not."""
        return self.stderr.replace("\\", "/").rsplit("/", 1)[-1] if self.stderr else None

    @property
    def printed_warnings(self) -> list[TorchWarning]:
        """The warnings torch printed: not the errors it raised that the program caught."""
        return [w for w in self.warnings if not w.raised]

    @property
    def raised(self) -> list[TorchWarning]:
        """The errors torch raised that the program caught (recorded, as torch logs nothing of them)."""
        return [w for w in self.warnings if w.raised]

    @property
    def times_raised(self) -> int:
        """How many times torch raised such an error, in all."""
        return sum(w.count for w in self.raised)

    @property
    def printed(self) -> int:
        """How many times torch warned, in all (the errors it raised not counted)."""
        return sum(w.count for w in self.printed_warnings)

    def to_json(self) -> dict[str, Any]:
        return {"warnings": [w.to_json() for w in self.warnings], "unreadable": self.unreadable, "stderr": self.stderr,
                "recorded": self.recorded}


def _user_line(frames: Any) -> UserLocation | None:
    """The innermost user frame of [[file, line, function], ...] (outermost first)."""
    if not isinstance(frames, list):
        return None
    for frame in reversed(frames):
        if (isinstance(frame, list) and len(frame) == 3 and isinstance(frame[0], str) and isinstance(frame[1], int)
                and not isinstance(frame[1], bool) and not is_framework_file(frame[0])):
            return UserLocation(frame[0], frame[1], frame[2] if isinstance(frame[2], str) else None)
    return None


# "WON'T CONVERT f /path/train.py line 6": the function whose compile failed (torch/_dynamo/convert_frame.py)
_WONT_CONVERT = lazy_compile(r"WON'T CONVERT (?P<function>\S+) (?P<file>[^\n]+?) line (?P<line>\d{1,9})\b")
# Inductor's output code (a module named for its hash in the Inductor cache): generated, not the user's
_GENERATED_CODE = lazy_compile(r"[/\\]c[a-z0-9]{50,}\.py$")


def _named_line(message: str) -> UserLocation | None:
    """The user's line named in the message: the function a failed compile left uncompiled, else the innermost user
    frame of a traceback in it ("User stack trace:" of a recompile limit)."""
    wont = _WONT_CONVERT.match(message)
    if wont:
        return UserLocation(wont["file"], int(wont["line"]), wont["function"])
    users = [f for f in traceback_frames(message)
             if not is_framework_file(f.filename) and not _GENERATED_CODE.search(f.filename)]
    return users[-1] if users else None


# torch.compiler.set_stance("fail_on_recompile") refusing a recompile (torch/_dynamo/eval_frame.py): a RuntimeError torch
# logs nothing of, recorded by compilescope; its text names the function and each cache entry's failed guard.
STANCE_REFUSED = "set_stance(\"fail_on_recompile\") refused a recompile"
_REFUSAL = lazy_compile(r"^Detected recompile when torch\.compile stance is 'fail_on_recompile'\. filename: '(?P<file>[^'\n]{1,1000})', "
                        r"function name: '(?P<function>[^'\n]{1,300})', line number: (?P<line>\d{1,9})")
_REFUSAL_GUARD = lazy_compile(r"^[ \t]*- (?P<compile_id>\d{1,9}/\d{1,9}): (?P<guard>[^\n]{1,2000})$", re.M)


def _refusal(message: str) -> tuple[str, str] | None:
    """The name and advice of a recompile the program's own stance refused: which function, and what it would have
    recompiled for (the guard of its newest compile, listed first; the others' are older shapes)."""
    if not message.startswith("Detected recompile when torch.compile stance is"):  # (no pattern compiled for others)
        return None
    m = _REFUSAL.match(message)
    if m is None:
        return None
    guards = [f"{g['guard']} (guard of [{g['compile_id']}])" for g in _REFUSAL_GUARD.finditer(message)]
    what = f"; it would have recompiled for: {guards[0]}" if guards else ""
    name = f"{STANCE_REFUSED} of {m['function']} ({m['file'].replace(chr(92), '/').rsplit('/', 1)[-1]}:{m['line']})"
    return name, (f"the program's own torch.compiler.set_stance(\"fail_on_recompile\") raised RuntimeError at this call, "
                  f"not a torch bug{what}. Warm up with such an input before setting the stance, or mark what changed "
                  "dynamic (torch._dynamo.mark_dynamic); set_stance(\"eager_on_recompile\") runs such calls eagerly "
                  "instead of raising")


def _known(message: str) -> tuple[str | None, str | None]:
    refused = _refusal(message)
    if refused is not None:
        return refused
    for words, name, advice in KNOWN:
        if words in message:
            return name, advice
    return None, None


# Anomaly mode's report of an error a backward function raised (torch/csrc/autograd/python_anomaly_mode.cpp), with the
# forward call that made that function. AOTAutograd traces every backward under detect_anomaly
# (torch/_functorch/_aot_autograd/graph_capture_wrappers.py), so in a compile this is the compile's own failure.
_BACKWARD_ERROR = lazy_compile(r"^Error detected in (?P<node>\w+)\. Traceback of forward call that caused the error:")


def backward_error(message: str) -> str | None:
    """The backward function named by anomaly mode's report of its error ("GeneratedBackwardFor_..._defaultBackward");
    None: the message is no such report."""
    m = _BACKWARD_ERROR.match(message)
    return m["node"] if m else None


def forward_call(message: str) -> UserLocation | None:
    """The user's line a warning's message names (its traceback's innermost user frame)."""
    return _named_line(message)


def recorded_kinds(trace: Trace) -> set[str]:
    """What compilescope's recorders wrote into the log (its RECORDERS artifacts, from run or capture()): "warnings",
    "cudagraph_skips". A kind recorded and absent from the log is one torch did not print."""
    kinds: set[str] = set()
    for entry in trace.compiles.values():
        for a in entry.artifacts:
            if a.name == RECORDERS:
                try:
                    doc = orjson.loads(trace.payload_text(a.payload))
                except ValueError:
                    continue
                records = doc.get("records") if isinstance(doc, dict) else None
                kinds.update(map(str, records) if isinstance(records, list) else ())
    return kinds


def torch_warnings(trace: Trace) -> TorchWarnings:
    """The log's recorded warnings (run, capture()); without any, those of the run's saved stderr beside the log."""
    result = TorchWarnings()
    records: list[tuple[str | None, Any]] = []  # (compile id, the record)
    artifacts = [a for entry in trace.compiles.values() for a in entry.artifacts if a.name == WARNING]
    hooked = "warnings" in recorded_kinds(trace)  # the recorder was on: no warning recorded is none printed
    for a in sorted(artifacts, key=lambda a: a.number):
        try:
            record = orjson.loads(trace.payload_text(a.payload))
        except ValueError:
            record = None
        records.append((str(a.compile_id) if a.compile_id is not None else None, record))
    if not records and trace.stderr_path is not None and not hooked:
        # The recorder sees every warning: a saved stderr adds none then. Without it, the stderr is the record, even
        # one that holds no warning.
        records = [(r.get("compile_id"), r) for r in trace.stderr_warnings or ()]
        result.stderr = trace.stderr_path
    groups: dict[tuple[str, str], TorchWarning] = {}
    failed = {str(e.compile_id) for e in trace.compiles.values() if e.compile_id is not None and e.metrics
              and e.metrics.get("fail_type")}
    for cid, record in records:
        message, source = (record.get("message"), record.get("source")) if isinstance(record, dict) else (None, None)
        if not isinstance(message, str) or not isinstance(source, str):
            result.unreadable += 1
            continue
        cid = cid if isinstance(cid, str) and cid != NO_COMPILE_ID else None
        found = groups.get((source, message))
        if found is not None:
            found.count += 1
            if cid is not None and cid not in found.compile_ids:
                found.compile_ids.append(cid)
            continue
        kind = record.get("category") or record.get("level")
        name, advice = _known(message)
        logger = record.get("logger")
        warning = TorchWarning(message, kind if isinstance(kind, str) else "warning", source, 1,
                               [cid] if cid is not None else [],
                               _named_line(message) or _user_line(record.get("traced")) or _user_line(record.get("stack")),
                               logger if isinstance(logger, str) else None, name, advice,
                               raised=isinstance(record.get("stance"), str),
                               failure=cid if cid in failed and backward_error(message) else None)
        groups[(source, message)] = warning
        result.warnings.append(warning)
    result.recorded = bool(records) or hooked or trace.stderr_path is not None
    return result

"""`with compilescope.capture() as cap:` traces the code in the block, in this process.

torch 2.13 writes its structured trace through the logger ``trace_log``
("torch.__trace", torch/_logging/_internal.py). At import, ``_init_logs()``
attaches ``LOG_TRACE_HANDLER``, a ``LazyTraceHandler`` whose directory comes
from TORCH_TRACE (None when unset: it removes itself on the first event).
Strings in stacks are interned once per process (torch/_logging/structured.py
``INTERN_TABLE``, announced by ``str`` events), and dumped sources once
(``DUMPED_FILES``).

On entry the capture saves that state, attaches its own LazyTraceHandler
writing to its directory (also as LOG_TRACE_HANDLER, so a ``set_logs()`` or
``_init_logs()`` inside the block keeps tracing there), detaches any other
trace handler (an outer TORCH_TRACE log would otherwise get this block's
string ids) and empties the intern table so the new log is self-contained.
On exit everything is put back as it was: tracing is off again, or back to
the outer TORCH_TRACE log.

Only compilations that happen inside the block are traced: a function compiled
before the block is not compiled again (call ``torch._dynamo.reset()`` first
to force it).
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from ._torch import require_torch
from .errors import CompilescopeError, OutputExistsError
from .output import check_output_dir
from .ingest.crash_files import crash_file_name
from .ingest.discover import find_logs
from .runner import attach_crash_reports, choose_log, join_process_logs, new_trace_dir, prepare_trace_dir

_ACTIVE_LOCK = threading.Lock()
_active: Capture | None = None
_MISSING = object()


class Capture:
    """Trace the torch.compile activity of a `with` block into a TORCH_TRACE log.

    out: where ``report()`` writes (default: ``<trace_dir>/report``).
    trace_dir: where the log goes (default: a new ``./compilescope_traces/<timestamp>/``).
    fresh_cache: compile with an empty, temporary Inductor cache, so every graph and
        kernel is in the trace (a warm cache skips them).
    provenance: turn on Inductor provenance tracking (what INDUCTOR_PROVENANCE=1 does).
    profile: also profile the block with torch.profiler (CPU, and CUDA when available), with
        ``torch._inductor.config.cpp.enable_kernel_profile`` on so C++ kernels are named; the
        Chrome trace is stored beside the log (``profile`` holds its path) and ``report()``
        adds the Runtime page. Profiling slows the block down; compile outside it to time
        steady-state steps only.
    """

    def __init__(
        self,
        out: str | os.PathLike | None = None,
        *,
        trace_dir: str | os.PathLike | None = None,
        fresh_cache: bool = False,
        provenance: bool = True,
        overwrite: bool = False,
        profile: bool = False,
    ):
        self.out = os.fspath(out) if out is not None else None
        self._trace_dir_arg = os.fspath(trace_dir) if trace_dir is not None else None
        self.fresh_cache = fresh_cache
        self.provenance = provenance
        self.overwrite = overwrite
        self.profile_block = profile
        self.profile: str | None = None  # the Chrome trace written, with profile=True
        self.trace_dir: str | None = None
        self.logs: list[str] = []  # logs written during the block
        self.log: str | None = None  # the one report() reads
        self.note: str | None = None  # set when there were several logs
        # Logs this process wrote in parts, joined into its first as `run` joins them: (that log, the parts appended)
        self.joined: list[tuple[str, list[str]]] = []
        self._before: set[str] = set()
        self._saved: dict[str, Any] | None = None
        self._contexts: list[Any] = []
        self._handler: logging.Handler | None = None

    # -- the block ---------------------------------------------------------------

    def __enter__(self) -> Capture:
        global _active
        require_torch("compilescope.capture()")
        with _ACTIVE_LOCK:
            if _active is not None:
                raise CompilescopeError("compilescope.capture() is already active; captures cannot be nested")
            _active = self
        try:
            if self.out is not None:  # before the block runs, as `run -o` checks before the program: not after
                try:
                    check_output_dir(self.out, self.overwrite, [self._trace_dir_arg] if self._trace_dir_arg else [])
                except OutputExistsError as exc:
                    raise exc.for_python() from None
            self.trace_dir = prepare_trace_dir(self._trace_dir_arg) if self._trace_dir_arg else new_trace_dir()
            self._before = set(os.listdir(self.trace_dir))
            self._enter_torch()
        except BaseException:
            self._exit_torch()
            _active = None
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        global _active
        try:
            self._exit_torch(*exc_info)
        finally:
            _active = None
        self.logs = [p for p in find_logs(self.trace_dir) if os.path.basename(p) not in self._before]
        # (draft_export's own log, under TORCH_DTRACE: its string table goes on from the block's log)
        self.joined = join_process_logs(self.logs)
        self.logs = [p for p in self.logs if os.path.exists(p)]
        if self.logs:
            self.log, self.note = choose_log(self.logs)

    def _enter_torch(self) -> None:
        import torch
        import torch._inductor.config as inductor_config
        import torch._logging._internal as internal
        import torch._logging.structured as structured

        trace_log = internal.trace_log
        self._saved = {
            "LOG_TRACE_HANDLER": internal.LOG_TRACE_HANDLER,
            "handlers": list(trace_log.handlers),
            "level": trace_log.level,
            "propagate": trace_log.propagate,
            "isEnabledFor": trace_log.__dict__.get("isEnabledFor", _MISSING),
            "INTERN_TABLE": dict(structured.INTERN_TABLE),
            "DUMPED_FILES": set(structured.DUMPED_FILES),
        }
        # The same setup _init_logs() does for TORCH_TRACE, with our directory.
        handler = internal._track_handler(internal.LazyTraceHandler(self.trace_dir))
        handler.setFormatter(internal.TorchLogsFormatter(trace=True))
        self._handler = handler
        for h in list(trace_log.handlers):
            trace_log.removeHandler(h)
        internal.LOG_TRACE_HANDLER = handler
        trace_log.setLevel(logging.DEBUG)
        trace_log.propagate = False
        trace_log.isEnabledFor = lambda level: level >= trace_log.level  # as torch does: logging.disable() must not drop events
        trace_log.addHandler(handler)
        structured.INTERN_TABLE.clear()
        structured.DUMPED_FILES.clear()

        if os.environ.get(DTRACE_ENV):
            self._push(_DtraceHere(self.trace_dir))
        self._push(_Recorders(self.trace_dir))
        if self.provenance:
            self._push(inductor_config.patch({"trace.provenance_tracking_level": max(1, inductor_config.trace.provenance_tracking_level)}))
        if self.fresh_cache:
            self._push(torch._inductor.utils.fresh_cache())
        if self.profile_block:
            self._push(inductor_config.patch({"cpp.enable_kernel_profile": True}))
            self._push(_Profiling(self))

    def _push(self, context: Any) -> None:
        context.__enter__()
        self._contexts.append(context)

    def _exit_torch(self, *exc_info: object) -> None:
        exc_info = exc_info or (None, None, None)
        errors = []
        while self._contexts:
            try:
                self._contexts.pop().__exit__(*exc_info)
            except Exception as exc:  # noqa: BLE001 - restore the logging state regardless
                errors.append(exc)
        saved, self._saved = self._saved, None
        if saved is not None:
            import torch._logging._internal as internal
            import torch._logging.structured as structured

            trace_log = internal.trace_log
            if self._handler is not None:
                trace_log.removeHandler(self._handler)
                self._handler.close()
                self._handler = None
            for h in list(trace_log.handlers):
                trace_log.removeHandler(h)
            for h in saved["handlers"]:
                trace_log.addHandler(h)
            internal.LOG_TRACE_HANDLER = saved["LOG_TRACE_HANDLER"]
            trace_log.setLevel(saved["level"])
            trace_log.propagate = saved["propagate"]
            if saved["isEnabledFor"] is _MISSING:
                trace_log.__dict__.pop("isEnabledFor", None)
            else:
                trace_log.isEnabledFor = saved["isEnabledFor"]
            structured.INTERN_TABLE.clear()
            structured.INTERN_TABLE.update(saved["INTERN_TABLE"])
            structured.DUMPED_FILES.clear()
            structured.DUMPED_FILES.update(saved["DUMPED_FILES"])
        if errors:
            raise errors[0]

    # -- after the block -----------------------------------------------------------

    def _require_log(self) -> str:
        if self.trace_dir is None or self._saved is not None or _active is self:
            raise CompilescopeError("the capture has not finished: call report() after the `with` block")
        if self.log is None:
            raise CompilescopeError(f"nothing was traced: no torch.compile activity inside the `with` block (log directory {self.trace_dir})")
        return self.log

    def load(self):
        """The captured trace (a Trace; use it as a context manager to release it)."""
        from .api import load

        return load(self._require_log())

    def report(self, out: str | os.PathLike | None = None, *, overwrite: bool | None = None, **options: Any) -> str:
        """Write the report of the captured log; returns the path of its index.html."""
        from .api import report

        log = self._require_log()
        target = os.fspath(out) if out is not None else self.out or os.path.join(self.trace_dir, "report")
        if self.profile is not None and "profiles" not in options:
            options["profiles"] = [self.profile]
        return report(log, out=target, overwrite=self.overwrite if overwrite is None else overwrite, **options)


PROFILE_NAME = "profile.json.gz"
DTRACE_ENV = "TORCH_DTRACE"


class _DtraceHere:
    """Under TORCH_DTRACE, torch.export.draft_export logs to a file of its own in the directory that variable names,
    read when it starts (its CaptureStructuredTrace): for the block, that is the capture's directory, as `run` sets
    it for its child, so the block's report has draft_export's issues and program (its log is joined to the block's)."""

    def __init__(self, trace_dir: str | None):
        self.trace_dir = trace_dir
        self.saved = os.environ.get(DTRACE_ENV)

    def __enter__(self) -> None:
        if self.trace_dir is not None:
            os.environ[DTRACE_ENV] = self.trace_dir

    def __exit__(self, *exc_info: object) -> None:
        if self.saved is None:
            os.environ.pop(DTRACE_ENV, None)
        else:
            os.environ[DTRACE_ENV] = self.saved


class _Profiling:
    """torch.profiler around the block; on exit its Chrome trace goes beside the log."""

    def __init__(self, capture: Capture):
        from torch.profiler import ProfilerActivity, profile

        import torch

        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
        self.capture = capture
        self.profiler = profile(activities=activities)

    def __enter__(self) -> None:
        self.profiler.__enter__()

    def __exit__(self, *exc_info: object) -> None:
        self.profiler.__exit__(*exc_info)
        assert self.capture.trace_dir is not None
        path = os.path.join(self.capture.trace_dir, PROFILE_NAME)
        self.profiler.export_chrome_trace(path)  # torch gzips a name ending in .gz
        self.capture.profile = path


def capture(
    out: str | os.PathLike | None = None,
    *,
    trace_dir: str | os.PathLike | None = None,
    fresh_cache: bool = False,
    provenance: bool = True,
    overwrite: bool = False,
    profile: bool = False,
) -> Capture:
    """``with compilescope.capture(out="report") as cap: ...`` then ``cap.report()``."""
    return Capture(out, trace_dir=trace_dir, fresh_cache=fresh_cache, provenance=provenance, overwrite=overwrite,
                   profile=profile)


class _Recorders:
    """Records into the trace, for the block: the transformed code of every frame compiled, and the warnings torch
    prints on stderr only, CUDA graph skips among them; and beside it a crash in native code, or the uncaught Python
    exception that ended the process (bytecode_capture.py)."""

    def __init__(self, trace_dir: str | None):
        self.trace_dir = trace_dir

    def __enter__(self):
        from .bytecode_capture import install

        own = os.path.join(self.trace_dir, crash_file_name(os.getpid())) if self.trace_dir is not None else None
        if own is not None and os.path.isfile(own) and os.path.getsize(own):
            # This process's crash file would replace that one: an earlier process's of the same pid (a container's
            # first process has the same pid each run) that died in a capture, nobody appending it. Appended now.
            attach_crash_reports(self.trace_dir, find_logs(self.trace_dir), pid=os.getpid())
        self.handle = install(crashes_to=self.trace_dir)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.handle.remove()
        if self.trace_dir is not None and isinstance(exc_info[1], BaseException):
            from .bytecode_capture import let_out

            # Uncaught once out of the block, it ends the process: recorded beside the log then (not now: the
            # program may yet catch it).
            let_out(exc_info[1], self.trace_dir)

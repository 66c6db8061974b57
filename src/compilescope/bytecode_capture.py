"""Record, into the TORCH_TRACE log itself, the code Dynamo runs instead of each compiled frame, and why CUDA graphs
skipped a graph at its first run.

torch logs the original and modified bytecode of resume functions only. This registers a bytecode hook
(``torch._dynamo.convert_frame.register_bytecode_hook``, the one depyf uses) that writes, for every
compiled frame, three ordinary ``artifact`` events under the frame's compile id:

- ``compilescope_original_bytecode``: ``dis`` of the code Dynamo compiled;
- ``compilescope_transformed_bytecode``: ``dis`` of the code it runs instead;
- ``compilescope_transformed_code``: that code decompiled to Python (or, outside the decompiled subset,
  the annotated disassembly), with a first line saying which.

And a logging handler on Inductor's CUDA graph logger writes ``compilescope_cudagraph_skip`` for each "skipping
cudagraphs due to ..." warning: torch decides some skips (a mutated input) when the graph first runs, outside any
compile, and says why on stderr only.

And ``compilescope_warning`` records every other warning torch prints to stderr only: a Python warning raised in
torch's code ("TensorFloat32 tensor cores ... not enabled", "pending, uninvoked backwards") and a torch logger's
WARNING or ERROR record ("hit config.recompile_limit"), with the user's line that led to it; and the error
``torch.compiler.set_stance("fail_on_recompile")`` raises when it refuses a recompile (torch logs nothing of it, and
the program may catch it), with the guard failures it names.

The log stays a plain TORCH_TRACE log (tlparse lists them as artifacts). Stdlib and torch only: the
child process of ``compilescope run`` loads this file by path (src/compilescope/_child/sitecustomize.py).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys

def _stdlib_module(name: str):
    """compilescope.decompile.<name>, or the same file loaded by path: a child interpreter without compilescope, or
    whose compilescope is another copy than this file's (another version: its names may lack this one's)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "decompile", f"{name}.py")
    try:
        module = importlib.import_module(f"compilescope.decompile.{name}")
        if os.path.abspath(getattr(module, "__file__", "") or "") != path:
            raise ImportError(f"compilescope.decompile.{name} is not {path}")
        return module
    except ImportError:
        spec = importlib.util.spec_from_file_location(f"_compilescope_decompile_{name}", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"compilescope.decompile.{name}: no module at {path}") from None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module


_names = _stdlib_module("recorded")
ORIGINAL, TRANSFORMED_BYTECODE, TRANSFORMED, HEADER, CUDAGRAPH_SKIP, WARNING, RECORDERS, CRASH_FILE_PREFIX = (
    _names.ORIGINAL, _names.TRANSFORMED_BYTECODE, _names.TRANSFORMED, _names.HEADER, _names.CUDAGRAPH_SKIP,
    _names.WARNING, _names.RECORDERS, _names.CRASH_FILE_PREFIX)
EXCEPTION_HEADER = _names.EXCEPTION_HEADER
# The recorders on in this process, and whether the log was told so yet (once per log: each install starts anew).
_recording = {"warnings": False, "cudagraph_skips": False, "crashes": False}
_crash_file: dict = {}  # the open file faulthandler writes a crash to (run's child: for its life; capture(): the block)
_told = {"log": False}
# Inductor's CUDA graph artifact logger (torch/_inductor/cudagraph_utils.py: getArtifactLogger(__name__, "cudagraphs")).
CUDAGRAPH_LOGGER = "torch._inductor.cudagraph_utils.__cudagraphs"


def _decompile():
    return _stdlib_module("core").decompile


def transformed_source(code) -> str:
    result = _decompile()(code)
    what = (f"decompiled from Python {sys.version_info[0]}.{sys.version_info[1]} bytecode" if result.ok
            else "not decompiled: annotated disassembly")
    return f"{HEADER}{code.co_name} ({what})\n{result.source}"


def _write(name: str, text: str) -> None:
    import torch._logging

    torch._logging.trace_structured("artifact", metadata_fn=lambda: {"name": name, "encoding": "string"},
                                    payload_fn=lambda: text)


def _tell_recorders() -> None:
    import json

    import torch._logging

    records = ["transformed_code", *(name for name, on in _recording.items() if on)]
    payload = json.dumps({"records": records})
    torch._logging.trace_structured("artifact", metadata_fn=lambda: {"name": RECORDERS, "encoding": "json"},
                                    payload_fn=lambda: payload)
    _told["log"] = True


def tell_recorders():
    """Write which recorders are on when the first compile starts, so that a log whose compiles all failed says so
    too (the bytecode hook runs only for a frame Dynamo transformed); returns the handle (``.remove()``)."""
    try:  # (its module, not torch._dynamo's name for it: run installs this while torch._dynamo is still importing)
        from torch._dynamo.callback import callback_handler as handler
    except ImportError:
        handler = None
    if handler is None or not hasattr(handler, "register_start_callback"):  # (the hook still tells)

        class Nothing:
            def remove(self) -> None:
                pass

        return Nothing()

    def on_start(args) -> None:
        try:
            if not _told["log"]:
                _tell_recorders()
        except Exception:  # noqa: BLE001 - recording must never break the user's compile
            pass

    handler.register_start_callback(on_start)

    class Handle:
        def remove(self) -> None:
            try:
                handler.remove_start_callback(on_start)
            except ValueError:
                pass

    return Handle()


def hook(original, transformed):
    import dis

    try:
        if not _told["log"]:
            _tell_recorders()
        _write(ORIGINAL, dis.Bytecode(original).dis())
        _write(TRANSFORMED_BYTECODE, dis.Bytecode(transformed).dis())
        _write(TRANSFORMED, transformed_source(transformed))
    except Exception:  # noqa: BLE001 - recording must never break the user's compile
        pass
    return None  # Dynamo keeps its own code


def install(crashes_to: str | None = None):
    """Register the hook and the warning recorders, and with crashes_to (a trace directory) the crash recorder;
    returns the handle (``.remove()`` undoes them all)."""
    from torch._dynamo.convert_frame import register_bytecode_hook

    crashes = record_crashes(crashes_to) if crashes_to is not None else None
    return _Both(register_bytecode_hook(hook), record_cudagraph_skips(), record_warnings(),
                 *([crashes] if crashes is not None else []), tell_recorders())


class _Both:
    def __init__(self, *handles):
        self.handles = handles

    def remove(self) -> None:
        for h in self.handles:
            h.remove()


def record_crashes(directory: str | None = None):
    """A crash in native code (a segfault in a custom op, while a CUDA graph records, in a generated kernel) kills the
    process before torch logs anything, and its stack went to stderr at best. faulthandler writes the Python stack of
    every thread to compilescope_crash_<pid>.txt in the trace directory instead. Nothing is written unless the process
    crashes. Returns the handle (``.remove()``).

    `compilescope run`'s child (directory None: TORCH_TRACE's): for the life of the process; once it has died, run
    appends the file to the process's log and prints it (runner.attach_crash_reports).
    capture() (directory: its own): for the block. Nobody is left to append the file when the process dies: the reader
    takes it from beside the log (ingest/crash_files.py). ``.remove()`` turns faulthandler off again and removes the file
    if nothing crashed.
    A faulthandler already on when the block starts (``python -X faulthandler``, PYTHONFAULTHANDLER, pytest's, the
    program's own) was turned on by someone who wants the stack where they see it. faulthandler writes to one file only:
    for the block it writes into the pipe of a ``tee`` (_CrashTee) that copies it to the crash file and to where it
    wrote before (_faulthandler_file) once the process has died; ``.remove()`` puts faulthandler back on that file (all
    threads). Without ``tee`` (Windows) nothing is recorded and faulthandler is left as it is.
    """
    import faulthandler

    class Nothing:
        def remove(self) -> None:
            pass

    for_block = directory is not None
    directory = directory if for_block else os.environ.get("TORCH_TRACE")
    if not directory or not os.path.isdir(directory) or _crash_file:
        return Nothing()
    already_on = for_block and faulthandler.is_enabled()
    tee_program = _CrashTee.program() if already_on else None
    if already_on and tee_program is None:
        return Nothing()
    path = os.path.join(directory, f"{CRASH_FILE_PREFIX}{os.getpid()}.txt")
    try:
        file = open(path, "w")  # noqa: SIM115 - faulthandler writes to its descriptor when the process dies
    except OSError:  # (a trace directory torch can write to but this cannot: the other recorders still go on)
        return Nothing()
    tee = None
    if already_on:
        file.close()  # (made empty here, as without a tee: the tee appends to it)
        try:
            tee = _CrashTee(str(tee_program), path, _faulthandler_file())
        except OSError:
            os.remove(path)
            return Nothing()
        faulthandler.enable(file=tee.pipe, all_threads=True)
        _crash_file["tee"] = tee
    else:
        faulthandler.enable(file=file, all_threads=True)
    _recording["crashes"], _told["log"] = True, False
    _crash_file["file"] = file  # (kept open without a tee: faulthandler holds only its descriptor)
    _crash_file["path"], _crash_file["pid"] = path, os.getpid()
    _record_exceptions()

    class Handle:
        def remove(self) -> None:
            if _crash_file.get("file") is not file:
                return
            if tee is not None:
                tee.onto_stderr()  # before the pipe closes: a crash at any moment of this still has its stack written
                tee.close()
            else:
                faulthandler.disable()
            _crash_file.clear()
            _recording["crashes"] = False
            _unchain_exceptions()
            file.close()
            try:
                if os.path.getsize(path) == 0:
                    os.remove(path)
            except OSError:
                pass

    return Handle()


MAX_EXCEPTION_MESSAGE = 4000  # characters of str(exc) kept (a torch error can quote a whole graph)
MAX_EXCEPTION_FRAMES = 100  # frames kept: the innermost, and OUTERMOST_FRAMES of the outermost (the user's script)
OUTERMOST_FRAMES = 10
MAX_TRACEBACK = 64_000  # characters of the traceback as Python prints it
# The hooks chained now: "sys" and "threading", each (our hook, the one it passes on to). A hook of ours that someone
# chained in turn stays in their chain once we have let go of it: it passes on and records nothing.
_hooks: dict = {}
# Set on an exception a capture() block let out: (crash file, pid). On the exception, not held here: a program that
# catches it (a notebook's cell) frees it, its traceback and its frames' locals as without compilescope.
LET_OUT = "_compilescope_crash_file"


def _record_exceptions() -> None:
    """Chain sys.excepthook and threading.excepthook (_unchain_exceptions restores them): an uncaught exception is
    written to the crash file (exception_text) while crashes are recorded, then handed to the hook that was there
    before, which prints it as ever; the exit status is Python's. A hook that is no longer the one installed (the
    program put its own, as rich.traceback.install() does) is chained again: the block records what reaches the
    program's hook. Not recorded: KeyboardInterrupt (a Ctrl-C: `run` says the program was interrupted) and SystemExit
    (an exit the program chose; Python never passes it to sys.excepthook, threading's hook drops it)."""
    _chain_sys_excepthook()
    import threading

    current = _hooks.get("threading")
    if current is not None and threading.excepthook is current[0]:
        return
    previous_thread = threading.excepthook

    def thread_excepthook(args):
        if _hooks.get("threading", (None,))[0] is thread_excepthook:
            thread = args.thread.name if args.thread is not None else "?"
            _record_uncaught(args.exc_type, args.exc_value, args.exc_traceback, thread)
        return previous_thread(args)

    _hooks["threading"] = (thread_excepthook, previous_thread)
    threading.excepthook = thread_excepthook


def _chain_sys_excepthook() -> None:
    current = _hooks.get("sys")
    if current is not None and sys.excepthook is current[0]:
        return
    previous = sys.excepthook

    def excepthook(exc_type, exc, tb):
        if _hooks.get("sys", (None,))[0] is excepthook:
            _record_uncaught(exc_type, exc, tb, None)
        return previous(exc_type, exc, tb)

    _hooks["sys"] = (excepthook, previous)
    sys.excepthook = excepthook


def _unchain_exceptions() -> None:
    """Put back the hooks that were there before _record_exceptions, where ours is still the one installed (one the
    program put since is left as it is). sys.excepthook stays while an exception a block let out is being handled
    (this block ran in its ``finally:`` or ``except:``): it may yet reach the top and end the process."""
    import threading

    if _let_out_file(sys.exc_info()[1]) is None:
        ours, previous = _hooks.pop("sys", (None, None))
        if ours is not None and sys.excepthook is ours:
            sys.excepthook = previous
    ours, previous = _hooks.pop("threading", (None, None))
    if ours is not None and threading.excepthook is ours:
        threading.excepthook = previous


def _record_uncaught(exc_type, exc, tb, thread: str | None) -> None:
    try:
        if exc_type is None or issubclass(exc_type, (KeyboardInterrupt, SystemExit)):
            return
        if _crash_file.get("pid") == os.getpid():
            path = _crash_file["path"]
        elif thread is None and (left := _let_out_file(exc)) is not None:
            path = left  # the exception a capture() block let out reached the top: the process ends with it
        else:
            return
        data = exception_text(exc_type, exc, tb, thread).encode("utf-8", "replace")
        file = _crash_file.get("file")
        if path == _crash_file.get("path") and "tee" not in _crash_file and file is not None and not file.closed:
            os.write(file.fileno(), data)  # at faulthandler's offset: a crash after this is written after it
        else:
            with open(path, "ab") as f:
                f.write(data)
    except Exception:  # noqa: BLE001 - the exception must still reach the hook that prints it
        pass


def _let_out_file(exc) -> str | None:
    """The crash file of the block that let exc out, or let out one exc was raised while handling (its cause or
    context, at any depth); None if none did in this process (a forked child's is its parent's)."""
    seen = 0
    while exc is not None and seen < 100:
        mark = getattr(exc, LET_OUT, None)
        if isinstance(mark, tuple) and len(mark) == 2 and mark[1] == os.getpid():
            return mark[0]
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def let_out(exc, directory: str) -> None:
    """A capture() block ends with exc propagating: should it reach sys.excepthook, it is recorded in the crash file
    of this process in directory (the block's own recorder has stopped by then). sys.excepthook is how it is known to
    end the process: it stays chained, recording only such an exception, until the next block ends."""
    if exc is None or isinstance(exc, (KeyboardInterrupt, SystemExit)):
        return
    try:
        setattr(exc, LET_OUT, (os.path.join(directory, f"{CRASH_FILE_PREFIX}{os.getpid()}.txt"), os.getpid()))
    except (AttributeError, TypeError):  # (an exception type that takes no attributes: not recorded)
        return
    _chain_sys_excepthook()


def exception_text(exc_type, exc, tb, thread: str | None) -> str:
    """What the crash file holds of an uncaught exception (recorded.EXCEPTION_HEADER's line, then the traceback)."""
    import json
    import traceback

    frames = [[f.filename, f.lineno, f.name] for f in traceback.extract_tb(tb)][::-1]  # innermost first
    omitted = max(0, len(frames) - MAX_EXCEPTION_FRAMES)
    if omitted:
        frames = frames[:MAX_EXCEPTION_FRAMES - OUTERMOST_FRAMES] + frames[-OUTERMOST_FRAMES:]
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - an exception whose __str__ raises
        message = "(its message could not be read)"
    name = getattr(exc_type, "__qualname__", str(exc_type))
    module = getattr(exc_type, "__module__", "builtins")
    printed = "".join(traceback.format_exception(exc_type, exc, tb))
    if len(printed) > MAX_TRACEBACK:
        printed = printed[:MAX_TRACEBACK // 2] + "\n...\n" + printed[-MAX_TRACEBACK // 2:]
    printed = printed.rstrip()
    record = {"type": name if module in ("builtins", None) else f"{module}.{name}",
              "message": message[:MAX_EXCEPTION_MESSAGE], "thread": thread, "frames": frames, "omitted": omitted,
              "lines": printed.count("\n") + 1}  # where the record ends: faulthandler's text may follow
    return f"{EXCEPTION_HEADER}{json.dumps(record)}\n{printed}\n"


def _faulthandler_file():
    """The file faulthandler writes a crash to now (it is on), as far as can be known: faulthandler has no getter.
    A file object it was given (``-X faulthandler`` and PYTHONFAULTHANDLER give sys.stderr) it holds, and lists last
    among its referents (after dump_traceback_later's and register's). Not told apart: enable() given a descriptor
    while dump_traceback_later() holds a file object, which is then taken (a watchdog's file gets the crash; rare, and
    a single held file is far more often enable()'s). A descriptor it does not hold: under pytest, the one pytest's
    faulthandler plugin gave it, a copy of the terminal's stderr kept in the session's stash (while tests run,
    descriptor 2 and sys.stderr are pytest's capture, lost if the process dies). Otherwise sys.stderr's descriptor."""
    import faulthandler
    import gc

    held = [o for o in gc.get_referents(faulthandler) if callable(getattr(o, "fileno", None))]
    if held:
        return held[-1]
    plugin = sys.modules.get("_pytest.faulthandler")
    key = getattr(plugin, "fault_handler_stderr_fd_key", None)
    if key is not None:
        for stash in gc.get_referrers(key):
            if isinstance(stash, dict) and stash is not vars(plugin) and isinstance(stash.get(key), int):
                return stash[key]
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # (replaced by an object without one, or None)
        return 2


class _CrashTee:
    """``tee -a -i PATH`` reading a pipe, its output where faulthandler wrote before the block (stderr, as a rule):
    faulthandler writes a crash into the pipe, and the tee copies it to the crash file and there; the process's death closes the pipe, and the tee exits. Until
    then it holds stderr open (a parent reading this process's stderr reads the stack before its end)."""

    EXIT_S = 2.0  # after its pipe closes, the tee ends at once; a descriptor of the pipe held elsewhere must not hang
    fork_hook = False  # (registered once per process: a hook cannot be unregistered)

    @staticmethod
    def program() -> str | None:
        import shutil

        return shutil.which("tee")

    def __init__(self, program: str, path: str, before):
        import subprocess

        self.before = before  # where faulthandler wrote: a file object or a descriptor
        try:
            self.stderr = before if isinstance(before, int) else before.fileno()
        except (AttributeError, OSError, ValueError):  # (closed since, or an object without one)
            self.before = self.stderr = 2
        read, self.pipe = os.pipe()  # (both close-on-exec: the program's own children do not hold the pipe open)
        try:
            # -i: a Ctrl-C the program handles does not end the tee. SIGPIPE left ignored (restore_signals): a stderr
            # nobody reads any more is a write error the tee goes on past, to the file. Its own messages: nowhere.
            self.process = subprocess.Popen([program, "-a", "-i", path], stdin=read, stdout=self.stderr,
                                            stderr=subprocess.DEVNULL, close_fds=True, restore_signals=False)
        except (OSError, ValueError):
            os.close(self.pipe)
            raise OSError(f"no tee for {path}") from None
        finally:
            os.close(read)
        if hasattr(os, "register_at_fork") and not _CrashTee.fork_hook:
            os.register_at_fork(after_in_child=_CrashTee.in_forked_child)
            _CrashTee.fork_hook = True

    def onto_stderr(self) -> None:
        """faulthandler on the file it wrote to before the block again, off if that cannot be (never left on the
        pipe)."""
        import faulthandler

        try:
            faulthandler.enable(file=self.before, all_threads=True)
        except (OSError, ValueError, RuntimeError):
            faulthandler.disable()

    @staticmethod
    def in_forked_child() -> None:
        """A child forked inside the block (multiprocessing's fork) would hold the pipe open past the block's end: it
        writes a crash to stderr, as before the block, and the block is its parent's to end."""
        tee = _crash_file.get("tee")
        if tee is None:
            return
        tee.onto_stderr()
        os.close(tee.pipe)
        _crash_file.clear()

    def close(self) -> None:
        import subprocess

        os.close(self.pipe)
        try:
            self.process.wait(timeout=self.EXIT_S)
        except subprocess.TimeoutExpired:  # (a child forked outside Python holds the pipe: nothing crashed here)
            self.process.kill()
            self.process.wait()


def record_cudagraph_skips():
    """Write each CUDA graph skip warning into the trace; returns the handle (``.remove()`` stops it)."""
    import json
    import logging

    class Recorder(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            try:
                message = record.getMessage()
                if not message.startswith("skipping cudagraphs"):
                    return
                import torch._logging

                payload = json.dumps({"message": message, "time": record.created})
                torch._logging.trace_structured(
                    "artifact", metadata_fn=lambda: {"name": CUDAGRAPH_SKIP, "encoding": "json"},
                    payload_fn=lambda: payload, expect_trace_id=False)
            except Exception:  # noqa: BLE001 - recording must never break the user's program
                pass

    logger = logging.getLogger(CUDAGRAPH_LOGGER)
    recorder = Recorder(logging.WARNING)
    logger.addHandler(recorder)
    _recording["cudagraph_skips"], _told["log"] = True, False

    class Handle:
        def remove(self) -> None:
            logger.removeHandler(recorder)
            _recording["cudagraph_skips"] = False

    return Handle()


MAX_MESSAGE = 20_000  # characters of one warning kept (an ERROR record's text can hold a whole g++ output)
MAX_SAME = 100  # records of one warning (same source, same start) kept: a warning logged in a loop stops there
USER_FRAMES = 3  # the innermost user frames kept of the stack that was running


def record_warnings():
    """Write each warning torch prints to stderr only into the trace; returns the handle (``.remove()`` stops it).

    Python warnings: ``warnings.showwarning`` is wrapped (the warning is still shown as before), and one raised in
    torch's files, or while Dynamo compiles, is recorded. Log records: a handler on each of torch's own loggers
    (they do not propagate to "torch"), at WARNING.
    """
    import json
    import logging
    import sys
    import threading
    import time
    import types
    import warnings

    import torch
    import torch._guards
    import torch._logging

    torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
    stdlib_dir = os.path.dirname(os.path.abspath(os.__file__)) + os.sep
    own_dirs = (torch_dir, os.path.dirname(os.path.abspath(__file__)) + os.sep)
    seen: dict[tuple, int] = {}
    writing = threading.local()  # set while this thread writes a record: trace_structured may itself warn

    def frames(stack) -> list:
        return [[f.filename, f.lineno, f.name] for f in stack]

    def user_stack() -> list:
        out: list[list] = []
        frame: types.FrameType | None = sys._getframe(2)
        while frame is not None and len(out) < USER_FRAMES:
            filename = frame.f_code.co_filename
            stdlib = filename.startswith(stdlib_dir) and "-packages" not in filename  # not site- or dist-packages
            if not (filename.startswith(own_dirs) or filename.startswith("<") or stdlib):
                out.append([filename, frame.f_lineno, frame.f_code.co_name])
            frame = frame.f_back
        return out[::-1]

    def source_of(filename: str, lineno: int) -> str:
        path = os.path.abspath(filename)
        return f"torch/{path[len(torch_dir):]}:{lineno}" if path.startswith(torch_dir) else f"{filename}:{lineno}"

    def write(message: str, source: str, fields: dict) -> None:
        key = (source, message[:200])
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > MAX_SAME or getattr(writing, "now", False):
            return
        writing.now = True
        try:
            traced: list = []
            try:
                traced = frames(torch._guards.TracingContext.extract_stack())
            except Exception:  # noqa: BLE001 - only while Dynamo traces
                pass
            payload = json.dumps({"message": message[:MAX_MESSAGE], "time": time.time(), **fields, "source": source,
                                  "traced": traced, "stack": user_stack()})
            torch._logging.trace_structured(
                "artifact", metadata_fn=lambda: {"name": WARNING, "encoding": "json"},
                payload_fn=lambda: payload, expect_trace_id=False)
        except Exception:  # noqa: BLE001 - recording must never break the user's program
            pass
        finally:
            writing.now = False

    shown = warnings.showwarning

    def showwarning(message, category, filename, lineno, file=None, line=None):
        try:
            compiling = torch._guards.CompileContext.current_compile_id() is not None
            if os.path.abspath(filename).startswith(torch_dir) or compiling:
                write(str(message), source_of(filename, lineno), {"category": category.__name__})
        except Exception:  # noqa: BLE001 - never break the user's program
            pass
        return shown(message, category, filename, lineno, file, line)

    class Recorder(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.name == CUDAGRAPH_LOGGER:  # compilescope_cudagraph_skip records those
                return
            try:
                message = record.getMessage()
                if record.exc_info and record.exc_info[1] is not None:
                    message += f"\n{type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
                write(message, source_of(record.pathname, record.lineno),
                      {"level": record.levelname, "logger": record.name, "time": record.created})
            except Exception:  # noqa: BLE001 - recording must never break the user's program
                pass

    def refused(exc: BaseException) -> None:
        """set_stance("fail_on_recompile") raised: torch logs nothing of it, and the program may catch it."""
        try:
            tb = exc.__traceback__
            while tb is not None and tb.tb_next is not None:
                tb = tb.tb_next
            source = source_of(tb.tb_frame.f_code.co_filename, tb.tb_lineno) if tb is not None else "torch"
            write(str(exc), source, {"category": type(exc).__name__, "stance": "fail_on_recompile"})
        except Exception:  # noqa: BLE001 - recording must never break the user's program
            pass

    warnings.showwarning = showwarning
    undo_stance = _watch_stance_refusals(refused)
    recorder = Recorder(logging.WARNING)
    loggers = [logging.getLogger(name) for name in torch._logging._internal.log_registry.get_log_qnames()]
    for logger in loggers:
        logger.addHandler(recorder)
    _recording["warnings"], _told["log"] = True, False

    class Handle:
        def remove(self) -> None:
            if warnings.showwarning is showwarning:
                warnings.showwarning = shown
            for logger in loggers:
                logger.removeHandler(recorder)
            undo_stance()
            _recording["warnings"] = False

    return Handle()


EVAL_FRAME = "torch._dynamo.eval_frame"
FAIL_ON_RECOMPILE = "fail_on_recompile"


def _watch_stance_refusals(refused):
    """Call refused(exc) with each error torch.compiler.set_stance("fail_on_recompile") raises (a recompile refused):
    eval_frame._callback_from_stance is wrapped, now or, while torch._dynamo is still importing (convert_frame comes
    first), once eval_frame is loaded. Returns what undoes it."""
    state: dict = {}

    def wrap(module) -> None:
        from_stance = getattr(module, "_callback_from_stance", None)
        if from_stance is None or state:
            return

        def callback_from_stance(callback):
            chosen = from_stance(callback)
            if getattr(getattr(module, "_stance", None), "stance", None) != FAIL_ON_RECOMPILE or not callable(chosen):
                return chosen

            def fail_callback(frame, *args, **kwargs):
                try:
                    return chosen(frame, *args, **kwargs)
                except RuntimeError as exc:
                    refused(exc)
                    raise

            # torch matches a cache entry's backend by this attribute: the same as its own callback's
            fail_callback._torchdynamo_orig_backend = getattr(chosen, "_torchdynamo_orig_backend", callback)
            return fail_callback

        module._callback_from_stance = callback_from_stance
        state["module"], state["original"] = module, from_stance

    # (_child/sitecustomize.py's _Finder does the same for convert_frame; it stays self-contained, as it runs before
    # this file is loaded)
    class Finder:
        def find_spec(self, name, path=None, target=None):
            if name != EVAL_FRAME:
                return None
            sys.meta_path.remove(self)
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is None or spec.loader is None:
                return spec
            exec_module = spec.loader.exec_module

            def exec_then_wrap(module):
                exec_module(module)
                try:
                    wrap(module)
                except Exception:  # noqa: BLE001 - never break the user's program
                    pass

            spec.loader.exec_module = exec_then_wrap
            return spec

    finder = None
    if EVAL_FRAME in sys.modules and hasattr(sys.modules[EVAL_FRAME], "_callback_from_stance"):
        wrap(sys.modules[EVAL_FRAME])
    else:
        finder = Finder()
        sys.meta_path.insert(0, finder)

    def undo() -> None:
        if finder is not None and finder in sys.meta_path:
            sys.meta_path.remove(finder)
        if state:
            state["module"]._callback_from_stance = state["original"]
        state.clear()

    return undo

"""The only code that writes report files: confined to the output directory."""

from __future__ import annotations

import contextlib
import errno
import gc
import os
import posixpath
import shutil
import stat
import tempfile
from typing import IO, Iterable, Iterator, Union

from . import location
from .collector import something_frozen
from .errors import CompilescopeError, OutputExistsError
from .model.records import NamedTuple

# Every report (compilescope's of any kind, and tlparse's) has this page at its top: --overwrite
# replaces only a directory that holds it, or compilescope's mark, never any other directory.
REPORT_PAGE = "index.html"
# Written first into every output directory, and removed once its top REPORT_PAGE is written: a batch or
# multi-rank run writes that page last, so a run stopped before it (Ctrl-C) leaves the mark, and --overwrite
# knows the directory for compilescope's own unfinished output.
WRITING_MARK = ".compilescope-writing"
_MARK_TEXT = b"compilescope was writing a report here and stopped before its index.html: --overwrite replaces it.\n"
# dump-src's output has no page (depyf's layout: .py files only): this file, written last, says it is compilescope's
# as REPORT_PAGE says a report is. (A comment: every file dump-src writes reads as Python.)
DUMP_SRC_MARK = ".compilescope-dump-src"
DUMP_SRC_MARK_TEXT = b"# compilescope dump-src wrote this directory: dump-src --overwrite replaces it.\n"
# With REPORT_PAGE, what says a directory is compilescope's output, finished or not: --overwrite replaces only a
# directory holding one of them.
_MARKS = (DUMP_SRC_MARK, WRITING_MARK)


class Kept(NamedTuple):
    """An input that --overwrite must never delete, and what it is (said when an output would hold it). A plain
    path in keep is a log being read, or a directory of logs: see _kept."""

    path: str
    what: str


def saved_analysis_input(path: str) -> Kept:
    return Kept(path, "the saved analysis being read")


def trace_directory(path: str) -> Kept:
    """(One not made yet, too: `run --trace-dir`.)"""
    return Kept(path, "the trace directory")


def program_file(path: str) -> Kept:
    """A word of the program's command line that names a file (the script, or a file it is given)."""
    return Kept(path, "the program being run (or a file its command line names)")


Keep = Iterable[Union[str, Kept]]


def _kept(entry: str | Kept) -> Kept:
    if isinstance(entry, Kept):
        return entry
    return trace_directory(entry) if location.is_dir(entry) else Kept(entry, "the log being read")


def check_output_dir(path: str, overwrite: bool, keep: Keep = ()) -> bool:
    """Whether path (a local path or a URL) can become an output directory (an error if not); True if --overwrite
    must replace it.

    keep: inputs that must survive: a log or a directory of logs by its path, anything else as Kept (a saved
    analysis, the program being run), so that a refusal says what it would have deleted.

    Changes nothing: `run` calls it before the slow run, so a bad -o fails first.
    """
    if location.is_url(path):
        return _check_remote_output(path, overwrite, keep)
    full = os.path.abspath(path)
    if os.path.islink(full):
        raise CompilescopeError(f"{path} is a symbolic link; choose another output directory")
    try:
        if not os.path.exists(full):
            parent = os.path.dirname(full)
            while not os.path.exists(parent):
                parent = os.path.dirname(parent)
            if not os.path.isdir(parent):
                raise CompilescopeError(f"cannot create output directory {path}: {os.strerror(errno.ENOTDIR)}")
            return False
        if not os.path.isdir(full):
            raise CompilescopeError(f"{path} exists and is not a directory")
        if not os.listdir(full):
            return False
    except OSError as exc:
        raise CompilescopeError(f"cannot use output directory {path}: {exc.strerror or exc}") from None
    # What --overwrite would refuse is said first: "pass --overwrite" and then "refusing to replace" sent users round.
    _check_replaceable(path, keep)
    if not overwrite:
        raise OutputExistsError(path)
    return True


def _check_replaceable(path: str, keep: Keep) -> None:
    """--overwrite replaces a report directory; never another directory, nor one that holds the input,
    the program being run, the current or the home directory."""
    here = os.path.realpath(path)
    _refuse_holding(path, location.Place("", here), keep)
    if not os.path.isfile(os.path.join(here, REPORT_PAGE)) and not any(_is_regular_file(os.path.join(here, mark))
                                                                       for mark in _MARKS):
        raise _not_a_report(path)


def _refuse_holding(path: str, here: location.Place, keep: Keep) -> None:
    """An error if the output at path holds something to keep: the input (named by path or URL: file://, dir::, ...
    name it too), the current or the home directory."""
    precious = [*keep, Kept(os.getcwd(), "the current directory"), Kept(os.path.expanduser("~"), "your home directory")]
    for entry in precious:
        other = _kept(entry)
        if here.holds(location.place(other.path)):
            raise CompilescopeError(f"refusing to replace {path}: it contains {other.what}; choose another output "
                                    "directory")


def _not_a_report(path: str) -> CompilescopeError:
    return CompilescopeError(f"refusing to replace {path}: it does not hold a compilescope report; "
                             "choose another output directory")


@location.remote_errors
def _check_remote_output(url: str, overwrite: bool, keep: Keep) -> bool:
    """check_output_dir for a URL (s3://, memory://, simplecache::, ...), with the same errors: not a file; replaced
    only with --overwrite, and only where it holds a report (REPORT_PAGE or WRITING_MARK at its top), never where it
    holds the logs being read. (Through fsspec, --overwrite emptied any directory: one holding no report too.)"""
    fs, inner = location.filesystem(url)
    try:
        if not fs.exists(inner):
            return False
        if not fs.isdir(inner):
            raise CompilescopeError(f"{url} exists and is not a directory")
        if not fs.ls(inner):
            return False
        # What --overwrite would refuse is said first, as for a local directory.
        _refuse_holding(url, location.place(url), keep)
        top = inner.rstrip("/")
        if not any(fs.isfile(f"{top}/{name}") for name in (REPORT_PAGE, *_MARKS)):
            raise _not_a_report(url)
    except CompilescopeError:
        raise
    except OSError as exc:
        raise CompilescopeError(f"cannot create output directory {url}: {exc}") from None
    if not overwrite:
        raise OutputExistsError(url)
    return True


class Found(NamedTuple):
    """What an output location held before a run put its WRITING_MARK there. A run that fails before writing anything
    else (an analysis that raises, Ctrl-C) takes the mark away again (and the directory it made): the mark left alone
    said "already exists" to the next run, for a report never written. A mark that was there before (a run stopped
    earlier, replaced with --overwrite) stays: the location is as found."""

    existed: bool
    marked: bool


@location.remote_errors
def prepare_remote_output(url: str, overwrite: bool, keep: Keep = ()) -> Found:
    """A URL made ready for a report (check_output_dir's rules; replaced with --overwrite). Then WRITING_MARK is put
    there, as OutputDir does: written_at(url, found) removes it once the report is uploaded, so a run stopped during
    the upload is compilescope's to replace. The mark is put first, before the analysis, so that a location it cannot
    write to fails at once (a bucket without write access), not after the slow part."""
    replace = check_output_dir(url, overwrite, keep)
    fs, inner = location.filesystem(url)
    mark = f"{inner.rstrip('/')}/{WRITING_MARK}"
    try:
        marked = replace and fs.isfile(mark)
        if replace:
            fs.rm(inner, recursive=True)
        existed = not replace and fs.exists(inner)
    except OSError as exc:
        raise CompilescopeError(f"cannot create output directory {url}: {exc}") from None
    with open_write(location.join(url, WRITING_MARK)) as f:
        f.write(_MARK_TEXT)
    return Found(existed, marked)


@location.remote_errors
def _restore_remote(url: str, found: Found) -> None:
    """The URL as found (Found), where it holds nothing but the mark this run put there."""
    fs, inner = location.filesystem(url)
    top = inner.rstrip("/")
    if found.marked or [posixpath.basename(p.rstrip("/")) for p in fs.ls(top, detail=False)] != [WRITING_MARK]:
        return
    fs.rm_file(f"{top}/{WRITING_MARK}")
    if not found.existed and fs.isdir(top) and not fs.ls(top):  # (a filesystem with directories: sftp, file://)
        fs.rmdir(top)


def _found_here(path: str) -> Found:
    full = os.path.abspath(path)
    return Found(os.path.lexists(full), _is_regular_file(os.path.join(full, WRITING_MARK)))


def _restore_local(path: str, found: Found) -> None:
    """The local directory as found (Found), where it holds nothing but the mark OutputDir wrote there."""
    full = os.path.abspath(path)
    mark = os.path.join(full, WRITING_MARK)
    if found.marked or os.path.islink(full) or os.listdir(full) != [WRITING_MARK] or not _is_regular_file(mark):
        return
    os.unlink(mark)
    if not found.existed:
        os.rmdir(full)


@contextlib.contextmanager
def restored_on_failure(path: str) -> Iterator[None]:
    """A local output directory (OutputDir's, made in the block) left as found when the block fails having written
    nothing but the mark (Found). One that holds anything more keeps its mark: --overwrite replaces it."""
    found = _found_here(path)
    try:
        yield
    except BaseException:
        with contextlib.suppress(OSError):
            _restore_local(path, found)
        raise


@contextlib.contextmanager
def report_destination(out: str, overwrite: bool, keep: Keep = ()) -> Iterator[str]:
    """The local directory a command writes its output for `out` into (OutputDir, write_report), so that every output
    goes through the same rules however it is named: a local path is itself (OutputDir checks it); a URL is checked
    and marked first (prepare_remote_output, with keep protected), written in a scratch directory, and uploaded once
    the block ends without an error. (A URL given to OutputDir was written to a local folder named like it: memory:/x.)
    Either way, a block that fails having written nothing leaves `out` as found (Found)."""
    if not location.is_url(out):
        with restored_on_failure(out):
            yield out
        return
    found = prepare_remote_output(out, overwrite, keep)
    with written_at(out, found) as local:
        yield local


def shown_output(out: str, local: str) -> tuple[str, str | None]:
    """(where the output is, as said at the end; its index.html to open, None where there is no page here): a URL as
    asked, a local directory as written."""
    if location.is_url(out):
        return out.rstrip("/"), None
    return local, os.path.join(local, REPORT_PAGE)


def _is_regular_file(path: str) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


class OutputDir:
    """A fresh output directory; every write stays inside it and follows no symlink."""

    def __init__(self, path: str, overwrite: bool, keep: Keep = (), last: str = REPORT_PAGE):
        """keep: paths that must survive (the log being reported): --overwrite never deletes them.
        last: the top file that says the directory is compilescope's output (DUMP_SRC_MARK for an output with no
        page), written last: WRITING_MARK is there until it is written."""
        self.path = os.path.abspath(path)
        try:
            if check_output_dir(path, overwrite, keep):
                shutil.rmtree(self.path)  # rmtree does not follow symlinks inside
            os.makedirs(self.path, exist_ok=True)
        except OSError as exc:
            raise CompilescopeError(f"cannot create output directory {path}: {exc.strerror or exc}") from None
        self._last = last
        self._mark: str | None = os.path.join(self.path, WRITING_MARK)
        _write_file(self._mark, _MARK_TEXT)
        self._dirs: set[str] = {self.path}
        self.files = 0
        self.bytes = 0
        self.files_by_process: list[int] = []  # after write_all with processes > 1: how many each wrote, this one first

    def resolve(self, relpath: str) -> str:
        """The absolute path for relpath, or an error if it would leave the directory."""
        parts = relpath.replace("\\", "/").split("/")
        if os.path.isabs(relpath) or "\0" in relpath or any(p in ("", ".", "..") for p in parts):
            raise CompilescopeError(f"refusing to write {relpath!r}: outside the output directory")
        return os.path.join(self.path, *parts)

    def _ensure_dir(self, directory: str) -> None:
        if directory in self._dirs:
            return
        self._ensure_dir(os.path.dirname(directory))
        if os.path.islink(directory):
            raise CompilescopeError(f"refusing to write through symbolic link {directory}")
        try:
            os.mkdir(directory)
        except FileExistsError:
            if os.path.islink(directory) or not os.path.isdir(directory):
                raise CompilescopeError(f"refusing to write through {directory}: not a directory of the report") from None
        except OSError as exc:
            raise CompilescopeError(f"cannot create {directory}: {exc.strerror or exc}") from None
        self._dirs.add(directory)

    def write(self, relpath: str, content: str | bytes | Iterable[bytes]) -> str:
        target = self.resolve(relpath)
        self._ensure_dir(os.path.dirname(target))
        if isinstance(content, str):
            # A big page is encoded a piece at a time: its text and all of its bytes are never held together.
            content = content.encode("utf-8", "replace") if len(content) <= BIG_PAGE else _encode_pieces(content)
        self.bytes += _write_file(target, content)
        self.files += 1
        if relpath == self._last and self._mark is not None:  # the directory now says it is compilescope's itself
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._mark)
            self._mark = None
        return target

    def write_all(self, files: Iterable[tuple[str, Content]], processes: int = 1) -> None:
        """Write every (relpath, content) of files, in their order.

        processes > 1 (where the system can fork): that many processes share the writing. Each walks the
        same files (the same renderer, forked from this one) and writes those it takes (_Shares), so
        content must be lazy (a generator) to cost nothing in the processes that skip it. Errors from any
        process surface here; a file is never left unwritten without an error.
        """
        if processes <= 1 or not hasattr(os, "fork"):
            with _frozen():
                for relpath, content in files:
                    self.write(relpath, content)
            return
        # signal, mmap (_Shares) and traceback (a forked process's failure) are imported only on this path, where
        # a report is written by several processes: a small log's start-up does without them. signal before the
        # fork, so the forked processes find it loaded.
        import signal

        shares = _Shares()
        before = self.files
        frozen_before = something_frozen()
        # What is here now stays shared, page for page, until a process writes to it: the collector's passes
        # over it would copy every page into each process. (And they would cost time: see _frozen.)
        gc.freeze()
        children = _fork_writers(self, files, shares, processes - 1)
        try:
            walked = self._write_share(files, shares)
        except BaseException:
            for pid, done in children:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                os.close(done)
            raise
        finally:
            if not frozen_before:
                gc.unfreeze()
        self.files_by_process = [self.files - before]
        failure = None
        for pid, done in children:
            report = _child_report(pid, done)
            if isinstance(report, str):
                failure = failure or report
                continue
            child_walked, files_n, bytes_n = report
            if child_walked != walked:
                failure = failure or f"the processes writing the report saw {walked} and {child_walked} files"
            self.files += files_n
            self.bytes += bytes_n
            self.files_by_process.append(files_n)
        if failure is not None:
            raise CompilescopeError(failure)
        if sum(self.files_by_process) != walked:  # every file taken exactly once (_Shares): never one missing
            raise CompilescopeError(f"internal error: {sum(self.files_by_process)} of the report's {walked} files "
                                    "were written")

    def _write_share(self, files: Iterable[tuple[str, Content]], shares: _Shares) -> int:
        """Write the files this process takes; the number of files walked."""
        walked = 0
        for index, (relpath, content) in enumerate(files):
            walked = index + 1
            if shares.take(index):
                self.write(relpath, content)
        return walked

BIG_PAGE = 4 << 20  # a page longer than this (in characters) is encoded and written a piece at a time
# No writer thread: one that created the files while the next page rendered cost 5-11% more CPU and 3-6 MB more
# peak memory on 6-12 MB logs, for no wall time saved (bench/RESULTS.md, ninth round).


Content = Union[str, bytes, Iterable[bytes]]


@contextlib.contextmanager
def _frozen() -> Iterator[None]:
    """The collector leaves what exists now (the trace, its analyses) alone while the report is written: writing
    makes many short-lived containers, and each older-generation pass went over all of it again (GPT-2: 2.4 ms of
    collections in the write, 1.3 ms frozen). Nothing is kept longer: it is freed as ever when unreferenced."""
    if something_frozen():  # (frozen by a caller: theirs to undo)
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


class _Shares:
    """Which of the processes writing a report writes which file.

    Each process walks the same files in the same order; at each one it takes it if no process has yet
    (a counter in memory the forked processes share, and a lock), so whichever is free takes the next file
    and a slow page never holds the others up. The files taken are always a prefix of the walk: a process
    at file i sees either i taken (skip it) or i next (take it).
    """

    def __init__(self) -> None:
        import mmap

        self._map = mmap.mmap(-1, mmap.PAGESIZE)  # anonymous and shared with forked children
        self._next = memoryview(self._map).cast("i")  # (4 bytes, aligned: read whole even while written)
        self._lock_r, self._lock_w = os.pipe()  # a lock across processes: holding it is holding the pipe's one byte
        os.write(self._lock_w, b"x")

    def take(self, index: int) -> bool:
        if self._next[0] != index:  # another process took it (the counter only grows)
            return False
        os.read(self._lock_r, 1)
        try:
            if self._next[0] != index:
                return False
            self._next[0] = index + 1
            return True
        finally:
            os.write(self._lock_w, b"x")


def _fork_writers(output: OutputDir, files: Iterable[tuple[str, Content]], shares: _Shares,
                  count: int) -> list[tuple[int, int]]:
    """Fork up to count processes that write their share of files (_child_writes); (pid, the pipe each
    reports on) for each one made."""
    children = []
    for _ in range(count):
        done_r, done_w = os.pipe()
        try:
            pid = os.fork()
        except OSError:  # (no room for another process: the ones there are write it all)
            os.close(done_r)
            os.close(done_w)
            break
        if pid == 0:
            os.close(done_r)
            _child_writes(output, files, shares, done_w)  # never returns
        os.close(done_w)
        children.append((pid, done_r))
    return children


def _child_report(pid: int, done: int) -> tuple[int, int, int] | str:
    """What a forked writer reported once it ended: (files walked, files written, bytes), or why it failed."""
    with os.fdopen(done, "rb") as f:
        report = f.read().decode("utf-8", "replace")
    _, status = os.waitpid(pid, 0)
    head, _, rest = report.partition("\n")
    fields = head.split()
    if len(fields) == 4 and fields[0] == "ok":
        walked, files, size = (int(x) for x in fields[1:])
        return walked, files, size
    ended = (f"killed by signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
             else f"exit status {os.waitstatus_to_exitcode(status)}")
    return rest or f"a second process writing the report ended early ({ended})"


def _child_writes(output: OutputDir, files: Iterable[tuple[str, Content]], shares: _Shares, done: int) -> None:
    """A forked process's part of write_all: its files, then one line to the parent, then exit (no cleanup
    of the parent's objects: they are the parent's)."""
    import signal

    code = 1
    try:
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # (not where it was ignored, e.g. nohup)
            signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: the parent reports it; this process just ends
        output.files = output.bytes = 0
        walked = output._write_share(files, shares)
        report = f"ok {walked} {output.files} {output.bytes}\n"
        code = 0
    except CompilescopeError as exc:
        report = f"error\n{exc}"
    except BaseException:  # noqa: BLE001  (a bug: its traceback, for the parent to show)
        import traceback

        report = f"error\n{traceback.format_exc()}"
    try:
        os.write(done, report.encode("utf-8", "replace")[:60000])
    finally:
        os._exit(code)


class FileCopy:
    """Content that is another file's bytes (the log's copy, raw.log): iterable in chunks like any content,
    and copied by the kernel when written here, never passing through Python. (A base class, not a
    Protocol: every file written is checked against it, and a plain isinstance costs nothing.)"""

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.rest(0))

    def copy_into(self, fd: int) -> int:
        """Copy into fd as far as the kernel can; the number of bytes copied."""
        raise NotImplementedError

    def rest(self, done: int) -> Iterable[bytes]:
        """The bytes after the first `done`, in chunks (where the kernel could not go on)."""
        raise NotImplementedError


def _write_file(target: str, content: bytes | Iterable[bytes]) -> int:
    """Create target and write content: unbuffered (open, write, close), as each chunk is written whole; a
    buffered file would add a stat, a tty test and a seek to every one of a report's thousands of files."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    written = 0
    try:
        fd = os.open(target, flags, 0o644)
        try:
            if isinstance(content, FileCopy):
                written = content.copy_into(fd)
                content = content.rest(written)
            if isinstance(content, bytes):
                written = _write_all(fd, content)
            else:
                for chunk in content:
                    written += _write_all(fd, chunk)
        finally:
            os.close(fd)
    except OSError as exc:
        # e.g. ELOOP: a symbolic link was planted where a report file goes; or a full disk.
        raise CompilescopeError(f"cannot write {target}: {exc.strerror or exc}") from None
    return written


def _write_all(fd: int, data: bytes) -> int:
    """os.write until every byte is written (it may write fewer, e.g. interrupted by a signal)."""
    done = os.write(fd, data)
    if done < len(data):
        view = memoryview(data)
        while done < len(data):
            done += os.write(fd, view[done:])
    return done


def _encode_pieces(text: str, size: int = 1 << 20) -> Iterator[bytes]:
    """text as UTF-8 in pieces (the same bytes as one encode: a piece ends between code points)."""
    for start in range(0, len(text), size):
        yield text[start:start + size].encode("utf-8", "replace")


def write_file(path: str, content: bytes, overwrite: bool) -> None:
    """One file the user named (e.g. --save FILE), written whole or not at all (never half a file at path); a URL
    (s3://, memory://, ...) through fsspec (it was written as a local file named like it: ./memory:/x/s.json)."""
    if location.is_url(path):
        _write_remote_file(path, content, overwrite)
        return
    target = os.path.abspath(path)
    if os.path.lexists(target) and not overwrite:
        raise OutputExistsError(path)
    if os.path.isdir(target) or os.path.islink(target):
        raise CompilescopeError(f"{path} is a directory or a symbolic link; choose another file")
    partial = f"{target}.partial-{os.getpid()}"
    try:
        with open(partial, "xb") as f:
            f.write(content)
        os.replace(partial, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise CompilescopeError(f"cannot write {path}: {exc.strerror or exc}") from None


@location.remote_errors
def _write_remote_file(url: str, content: bytes, overwrite: bool) -> None:
    """write_file at a URL, by its rules: not over an existing file without overwrite, never over a directory. One
    put of the whole content: an object store shows the file only once all of it is there."""
    fs, inner = location.filesystem(url)
    try:
        if fs.isdir(inner):
            raise CompilescopeError(f"{url} is a directory; choose another file")
        if fs.exists(inner) and not overwrite:
            raise OutputExistsError(url)
        parent = posixpath.dirname(inner.rstrip("/"))
        if parent and not fs.exists(parent):  # (a filesystem with directories puts no file in a missing one)
            fs.makedirs(parent, exist_ok=True)
        fs.pipe_file(inner, content)
    except OSError as exc:
        raise CompilescopeError(f"cannot write {url}: {exc}") from None


@contextlib.contextmanager
def written_at(out: str, found: Found | None = None) -> Iterator[str]:
    """A local directory to write a report into: `out` itself, or (out is a URL: s3://, gs://, ...) a scratch
    directory uploaded to `out` at the end and removed, so local disk holds one report at a time.
    found: prepare_remote_output put WRITING_MARK at out, removed once the report (its REPORT_PAGE last) is there; a
    block that fails having put nothing else there takes it away again (one that did: a rank's report goes straight
    to out; or an upload stopped part way, keeps it)."""
    if not location.is_url(out):
        yield out
        return
    scratch = tempfile.mkdtemp(prefix="compilescope-out-")
    try:
        try:
            yield os.path.join(scratch, "report")
        except BaseException:
            if found is not None:
                with contextlib.suppress(OSError, CompilescopeError):  # (the failure is the one to say)
                    _restore_remote(out, found)
            raise
        upload_dir(os.path.join(scratch, "report"), out)
        if found is not None:
            remove_file(location.join(out, WRITING_MARK))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# -- writing a local path or a URL (location.py only reads) --------------------------------

@location.remote_errors
def open_write(path: str) -> IO[bytes]:
    """A binary stream that creates the file (remote: uploaded as it is written, in parts)."""
    if not location.is_url(path):
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        return open(path, "wb")
    fs, inner = location.filesystem(path)
    if getattr(fs, "fs", None) is not None:
        # A caching wrapper (simplecache::, filecache::) opens any path: it writes a local copy and puts it in place
        # when closed, where a filesystem with directories finds none to put it in. So its directory is made first.
        fs.makedirs(posixpath.dirname(inner), exist_ok=True)
    try:
        return fs.open(inner, "wb")
    except FileNotFoundError:  # its directory is not there yet (made only now: see upload_dir)
        fs.makedirs(posixpath.dirname(inner), exist_ok=True)
        return fs.open(inner, "wb")


@location.remote_errors
def upload_dir(local: str, url: str) -> None:
    """Every file under a local directory to the same relative paths under url."""
    sources, targets = [], []
    for root, _dirs, files in os.walk(local):
        for name in files:
            source = os.path.join(root, name)
            sources.append(source)
            targets.append(location.join(url, *os.path.relpath(source, local).split(os.sep)))
    if not sources:
        return
    fs, _ = location.filesystem(url)
    paths = [location.filesystem(t)[1] for t in targets]
    try:
        fs.put(sources, paths)
    except FileNotFoundError:
        # A filesystem with real directories (local through a URL, sftp, ...) puts no file in one that is not there
        # yet; an object store (S3, GCS) has none to make, and making them would cost it a request each. So they are
        # made only once a file could not be put, and every file is put again.
        for directory in _deepest(posixpath.dirname(p) for p in paths):
            fs.makedirs(directory, exist_ok=True)
        fs.put(sources, paths)


def _deepest(directories: Iterable[str]) -> list[str]:
    """The directories that hold none of the others (making them makes the rest)."""
    unique = sorted(set(directories), reverse=True)  # a directory's subdirectories sort after it: seen first here
    kept: list[str] = []
    for directory in unique:
        if not any(k.startswith(directory.rstrip("/") + "/") for k in kept):
            kept.append(directory)
    return kept


@location.remote_errors
def remove_file(path: str) -> None:
    """Delete a file (missing: nothing to do)."""
    if not location.is_url(path):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    fs, inner = location.filesystem(path)
    with contextlib.suppress(FileNotFoundError):
        fs.rm_file(inner)


@location.remote_errors
def remove_tree(path: str) -> None:
    """Delete a directory and everything in it (missing: nothing to do)."""
    if not location.is_url(path):
        import shutil

        shutil.rmtree(path, ignore_errors=True)
        return
    fs, inner = location.filesystem(path)
    try:
        if fs.exists(inner):
            fs.rm(inner, recursive=True)
    except FileNotFoundError:
        pass


def spool_events(events: Iterable, rank: int | None, path: str) -> int:
    """A rank's chromium events, one JSON object per line, each with pid = rank (one process per rank in Perfetto),
    spooled where the coordinator merges them (a scratch directory, or cli/multirank's SPOOL_DIR in the output directory); how many."""
    import orjson

    n = 0
    with open_write(path) as f:
        for event in events:
            if isinstance(event, dict) and rank is not None:
                event["pid"] = rank
            f.write(orjson.dumps(event) + b"\n")
            n += 1
    return n

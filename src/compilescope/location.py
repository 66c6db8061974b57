"""Where logs and reports live: a local path, or a URL that fsspec knows (s3://, gs://, hdfs://, file://).

Local paths go through os and open, as before; only a URL needs fsspec (the optional extra
`compilescope[remote]`, plus the filesystem's own package: s3fs, gcsfs, pyarrow for hdfs).
Remote files are streamed: a directory is listed, each log is opened and read in blocks,
and nothing is copied whole to local disk first.
This module only reads (and lists); what writes a path or a URL is in output.py.
"""

from __future__ import annotations

import functools
import io
import os
import stat
from .model.records import NamedTuple, dataclass
from typing import IO, Any, BinaryIO, Callable, TypeVar

from .errors import CompilescopeError
from .lazy_regex import lazy_compile

T = TypeVar("T")


def remote_errors(func: Callable[..., T]) -> Callable[..., T]:
    """A filesystem package's own errors (botocore's NoCredentialsError, a cloud client's auth or HTTP error) as one
    clear line naming the URL, like a missing file's, instead of an internal error."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        try:
            return func(*args, **kwargs)
        except (OSError, CompilescopeError):
            raise
        except Exception as exc:
            url = next((a for a in args if isinstance(a, str) and is_url(a)), None)
            if url is None:
                raise
            raise CompilescopeError(f"{url}: {type(exc).__name__}: {exc}") from None

    return wrapper


# An fsspec chain: protocols each followed by "::", then the location they wrap (dir::/tmp/x, simplecache::s3://b/k).
# What follows the last "::" may be a plain path, which fsspec opens on the local filesystem: such a chain was taken
# for a local path and written under ./dir::/tmp/x.
_CHAIN = lazy_compile(r"[A-Za-z][A-Za-z0-9+.-]+::")  # (matched only where a path holds "::")


def is_url(path: str | os.PathLike) -> bool:
    """A location fsspec must open (file:// URLs and fsspec chains included); a plain path (or a Path) is not one."""
    return isinstance(path, str) and ("://" in path[:32] or ("::" in path and _CHAIN.match(path) is not None))


FILE_URL = "file://"


def local_output(path: str) -> str:
    """An output location as it is written: a file:// URL, or dir:: over a local path (dir::/tmp/x,
    dir::file:///tmp/x), as the local path it names, so it is written exactly as that path would be (OutputDir:
    --overwrite's checks, no symlink followed; the page to open); any other location as given. (Through fsspec,
    --overwrite emptied any directory so named: one holding no report too.)

    What follows file:// is the path, as fsspec reads a file:// log: from the current directory unless it
    starts with /.
    """
    if path.startswith(FILE_URL):
        return os.path.abspath(path[len(FILE_URL):])
    if "::" in path and _CHAIN.match(path):
        try:
            fs, inner = filesystem(path)  # (dir:: layers unwrapped)
        except CompilescopeError:
            return path  # (said where it is written: this runs while the arguments are parsed, which says no error)
        from fsspec.implementations.local import LocalFileSystem

        if type(fs) is LocalFileSystem:  # (a caching wrapper, simplecache::, is a URL of its own)
            return os.path.abspath(inner)
    return path


def absolute(path: str) -> str:
    """The name to record and show: a URL as given, a local path made absolute."""
    return path.rstrip("/") if is_url(path) else os.path.abspath(path)


def join(base: str, *names: str) -> str:
    if is_url(base):
        return "/".join([base.rstrip("/"), *names])
    return os.path.join(base, *names)


def basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1] if is_url(path) else os.path.basename(path)


def filesystem(url: str) -> tuple[Any, str]:
    """(fsspec filesystem, path within it) for a URL; a clear error when fsspec or the protocol's package is missing."""
    try:
        from fsspec.core import url_to_fs
    except ImportError:
        raise CompilescopeError(f"{url}: reading or writing URLs needs fsspec: pip install 'compilescope[remote]'") from None
    try:
        fs, inner = url_to_fs(url)
    except (ImportError, ValueError) as exc:
        # A chain fsspec cannot open may have been meant as a local path (a::b): how to say so.
        local = f" (a local path with '::' in its name: ./{url})" if isinstance(exc, ValueError) and "://" not in url[:32] else ""
        raise CompilescopeError(f"{url}: {exc}{local}") from None
    from fsspec.implementations.dirfs import DirFileSystem

    # fsspec roots a dir:: URL's DirFileSystem at the URL's path and also returns that path as the path within it, so
    # a file landed under the path twice (memory://base/base/...). The filesystem it wraps, at the whole path, is the
    # same location; and every URL under one dir:: base then names its file in one filesystem (upload_dir puts them
    # all through the base's).
    while isinstance(fs, DirFileSystem) and fs.path == fs.fs._strip_protocol(inner):
        fs, inner = fs.fs, fs.path
    return fs, inner


# The storage options that pick which server a protocol's paths are on: s3fs's and gcsfs's endpoint_url (s3fs also
# takes it in client_kwargs), the host and port of sftp, ftp, hdfs, smb..., an Azure account. The same bucket and key
# at two endpoints (AWS and a MinIO) are two files.
_ENDPOINT_OPTIONS = ("endpoint_url", "host", "port", "account_name")


@dataclass(frozen=True)
class Place:
    """Where a path or URL lands, to tell whether one location holds another however each is named (a plain path,
    file://, dir:: or simplecache:: over either, s3://...): a filesystem and the path within it."""

    filesystem: str  # "" for the local filesystem; else the protocol of the filesystem under any wrapper
    path: str  # local: made absolute, symbolic links followed; else as the filesystem names it, no trailing /
    # The storage options of _ENDPOINT_OPTIONS the filesystem was given, as (name, value) pairs. One it was not given
    # is its default, or one from the environment (AWS_ENDPOINT_URL_S3): unknown here, so any other value may be it.
    endpoint: tuple[tuple[str, str], ...] = ()

    def holds(self, other: "Place") -> bool:
        """other is this place or lies under it."""
        sep = os.sep if not self.filesystem else "/"
        return self.same_filesystem(other) and (
            other.path == self.path or other.path.startswith(self.path.rstrip(sep) + sep))

    def same_filesystem(self, other: "Place") -> bool:
        """Whether the two may be one filesystem: one protocol, and no endpoint option that both name, differently. An
        option only one names may be the other's default, so they are taken for one: never an input left unprotected."""
        if self.filesystem != other.filesystem:
            return False
        theirs = dict(other.endpoint)
        return all(theirs.get(name, value) == value for name, value in self.endpoint)


def place(path: str) -> Place:
    """Where path lands: a caching wrapper (simplecache::) writes through to the filesystem it wraps, and a local
    file named by URL is the local file."""
    if not is_url(path):
        return Place("", os.path.realpath(path))
    fs, inner = filesystem(path)
    from fsspec.implementations.cached import CachingFileSystem
    from fsspec.implementations.dirfs import DirFileSystem
    from fsspec.implementations.local import LocalFileSystem

    while isinstance(fs, (CachingFileSystem, DirFileSystem)):
        if isinstance(fs, DirFileSystem):  # (one filesystem() left: a dir:: rooted elsewhere)
            inner = fs._join(inner)
        fs = fs.fs
    if isinstance(fs, LocalFileSystem):
        return Place("", os.path.realpath(inner))
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return Place(protocol, fs._strip_protocol(inner).rstrip("/"), endpoint(getattr(fs, "storage_options", None) or {}))


def endpoint(options: dict) -> tuple[tuple[str, str], ...]:
    """The options of _ENDPOINT_OPTIONS among a filesystem's storage options (Place.endpoint); an endpoint_url in
    client_kwargs counts where none is given directly (s3fs: the direct one wins)."""
    named = dict(options)
    client = named.get("client_kwargs")
    if named.get("endpoint_url") is None and isinstance(client, dict) and client.get("endpoint_url") is not None:
        named["endpoint_url"] = client["endpoint_url"]
    pairs = []
    for name in _ENDPOINT_OPTIONS:
        value = named.get(name)
        if value is not None and value != "":
            pairs.append((name, str(value).rstrip("/").lower()))  # (two spellings of one server compare equal)
    return tuple(pairs)


@remote_errors
def open_read(path: str, gzipped: bool = False) -> IO[bytes]:
    """A binary stream of the file (remote: read in blocks as it is consumed; gzipped: decompressed)."""
    if not is_url(path):
        return open(path, "rb")
    fs, inner = filesystem(path)
    try:
        if gzipped:
            from fsspec.core import OpenFile

            return OpenFile(fs, inner, "rb", compression="gzip").open()  # closing it closes the remote file too
        # fsspec's readline takes no size; the reader caps line length with it, so a buffered reader on top.
        return io.BufferedReader(fs.open(inner, "rb"), buffer_size=1 << 20)
    except FileNotFoundError:
        raise OSError(2, "no such file") from None


@remote_errors
def size(path: str) -> int:
    """The file's size in bytes; 0 when it cannot be found (the reader then says why)."""
    try:
        if not is_url(path):
            return os.path.getsize(path)
        fs, inner = filesystem(path)
        return int(fs.size(inner) or 0)
    except (OSError, FileNotFoundError):
        return 0


def process_local(path: str) -> bool:
    """A URL whose filesystem lives in this process's memory (memory://, also behind dir:: or simplecache::): a
    worker process sees an empty one of its own, so what it writes there is lost and what is there it cannot read."""
    if not is_url(path):
        return False
    fs: Any = filesystem(path)[0]
    from fsspec.implementations.memory import MemoryFileSystem

    while fs is not None:  # a wrapping filesystem (dir::, simplecache::) holds the one it wraps as .fs
        if isinstance(fs, MemoryFileSystem):
            return True
        fs = getattr(fs, "fs", None)
    return False


@dataclass
class Entry:
    """A plain file listed in a directory (local or a URL), with its size and modification time."""

    path: str  # a URL when listed from a URL
    size: int
    mtime: float  # 0.0 when the filesystem does not say


@remote_errors
def list_files(directory: str) -> list[Entry]:
    """The plain files directly in a directory (no recursion), by name."""
    if not is_url(directory):
        try:
            names = sorted(os.listdir(directory))
        except OSError as exc:
            raise CompilescopeError(f"cannot read directory {directory}: {exc.strerror}") from None
        entries = []
        for name in names:
            path = os.path.join(directory, name)
            if os.path.isfile(path):
                st = os.stat(path)
                entries.append(Entry(path, st.st_size, st.st_mtime))
        return entries
    fs, inner = filesystem(directory)
    try:
        listed = fs.ls(inner, detail=True)
    except (FileNotFoundError, NotADirectoryError):
        raise CompilescopeError(f"cannot read directory {directory}: no such directory") from None
    except OSError as exc:
        raise CompilescopeError(f"cannot read directory {directory}: {exc}") from None
    base = directory.rstrip("/")
    entries = [
        Entry(f"{base}/{info['name'].rstrip('/').rsplit('/', 1)[-1]}", int(info.get("size") or 0), _mtime(info))
        for info in listed
        if info.get("type") == "file"
    ]
    return sorted(entries, key=lambda e: e.path)


@remote_errors
def exists(path: str) -> bool:
    if not is_url(path):
        return os.path.exists(path)
    fs, inner = filesystem(path)
    try:
        return bool(fs.exists(inner))
    except OSError:
        return False


@remote_errors
def is_dir(path: str) -> bool:
    if not is_url(path):
        return os.path.isdir(path)
    fs, inner = filesystem(path)
    try:
        return bool(fs.isdir(inner))
    except OSError:
        return False


def _mtime(info: dict) -> float:
    """Modification time from an fsspec listing: each filesystem names it differently."""
    for key in ("mtime", "LastModified", "last_modified", "updated", "created"):
        value = info.get(key)
        if value is None:
            continue
        if hasattr(value, "timestamp"):
            return float(value.timestamp())
        try:
            return float(value)
        except (TypeError, ValueError):
            continue
    return 0.0


# Why read_local_bytes read nothing (LocalBytes.refused); else it is the OS's words for its error ("Permission denied")
NOT_HERE = "not here"  # no such file, or a path the OS refuses (a NUL byte in it)
NOT_A_FILE = "not a regular file"  # a directory, a FIFO (its open waits for a writer), a device (/dev/zero never ends)
TOO_BIG = "too big"


class NotARegularFile(OSError):
    """open_regular opened something other than a regular file (and closed it)."""


def open_regular(path: str, follow_links: bool = True) -> tuple[int, os.stat_result]:
    """A regular local file that a log names or a log directory holds (the log is untrusted), opened for reading: its
    fd (blocking) and its fstat. What was opened is checked, not a stat made before: it is opened without waiting (a
    FIFO put there since would block the open), and its fstat must say a regular file (NotARegularFile, an OSError,
    else). follow_links False: a symlink is refused (a directory from elsewhere could point one at a file of the
    reader's). Raises OSError, or ValueError for a path with a NUL byte."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (0 if follow_links else getattr(os, "O_NOFOLLOW", 0))
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotARegularFile(NOT_A_FILE)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def open_regular_file(path: str, follow_links: bool = True) -> BinaryIO:
    """open_regular's file as a binary stream, for a reader that reads its own way (a head, chunks, lines) and bounds
    what it reads itself. Raises as open_regular does."""
    fd, _ = open_regular(path, follow_links)
    try:
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class LocalBytes(NamedTuple):
    data: bytes | None  # None: not read, for the reason in refused
    refused: str = ""
    size: int = 0  # the file's size when opened: more than len(data) where it was cut at max_bytes
    mtime: float = 0.0


def read_local_bytes(path: str, max_bytes: int, cut: bool = False, follow_links: bool = True) -> LocalBytes:
    """The bytes of the regular file at a local path (open_regular), where it holds at most max_bytes; cut True: its
    first max_bytes where it holds more. Read bounded, whatever its size said (it may have grown since)."""
    try:
        fd, info = open_regular(path, follow_links)
    except (FileNotFoundError, NotADirectoryError, ValueError):
        return LocalBytes(None, NOT_HERE)
    except NotARegularFile:
        return LocalBytes(None, NOT_A_FILE)
    except OSError as e:
        return LocalBytes(None, e.strerror or str(e))
    try:
        if info.st_size > max_bytes and not cut:
            return LocalBytes(None, TOO_BIG)
        with open(fd, "rb", closefd=False) as f:
            data = f.read(max_bytes + 1)
    except OSError as e:
        return LocalBytes(None, e.strerror or str(e))
    finally:
        os.close(fd)
    size = max(info.st_size, len(data))
    if len(data) > max_bytes:
        if not cut:
            return LocalBytes(None, TOO_BIG)
        data = data[:max_bytes]
    return LocalBytes(data, "", size, info.st_mtime)


class LocalLines(NamedTuple):
    lines: tuple[str, ...] | None  # None: not read, for the reason in refused
    refused: str = ""


# The line ends Python's tokenizer counts lines by: str.splitlines() also ends a line at a form feed (a page break in
# a Python file), \x0b, \x1c-\x1e, \x85 and \u2028/9, which made every line after one a line off the log's numbers.
_LINE_END = lazy_compile(r"\r\n|\r|\n")  # (a file with a line end splitlines() takes for one)
_NOT_LINE_ENDS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # (where a file holds none, splitlines() is the same, faster)


def read_local_lines(path: str, max_bytes: int) -> LocalLines:
    """The lines of the regular file at a local path that a log names (any text: the log is untrusted), as UTF-8 with
    what is not replaced, where it holds at most max_bytes (read_local_bytes), numbered as Python numbers them."""
    read = read_local_bytes(path, max_bytes)
    if read.data is None:
        return LocalLines(None, read.refused)
    return LocalLines(python_lines(read.data.decode("utf-8", "replace")))


def python_lines(text: str) -> tuple[str, ...]:
    """text's lines as Python numbers them (_LINE_END)."""
    if not any(char in text for char in _NOT_LINE_ENDS):
        return tuple(text.splitlines())
    lines = _LINE_END.split(text)
    return tuple(lines[:-1] if lines[-1] == "" else lines)

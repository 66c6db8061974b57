"""The only code that writes report files: confined to the output directory."""

from __future__ import annotations

import os
import shutil
from typing import Iterable

from ..errors import CompilescopeError

class OutputDir:
    """A fresh output directory; every write stays inside it and follows no symlink."""

    def __init__(self, path: str, overwrite: bool, keep: Iterable[str] = ()):
        """keep: paths that must survive (the log being reported): --overwrite never deletes them."""
        self.path = os.path.abspath(path)
        if os.path.islink(self.path):
            raise CompilescopeError(f"{path} is a symbolic link; choose another output directory")
        try:
            if os.path.exists(self.path):
                if not os.path.isdir(self.path):
                    raise CompilescopeError(f"{path} exists and is not a directory")
                if os.listdir(self.path):
                    if not overwrite:
                        raise CompilescopeError(f"{path} already exists; pass --overwrite to replace it")
                    self._check_replaceable(path, keep)
                    shutil.rmtree(self.path)  # rmtree does not follow symlinks inside
            os.makedirs(self.path, exist_ok=True)
        except OSError as exc:
            raise CompilescopeError(f"cannot create output directory {path}: {exc.strerror or exc}") from None
        self._dirs: set[str] = {self.path}
        self.files = 0
        self.bytes = 0

    def _check_replaceable(self, path: str, keep: Iterable[str]) -> None:
        """--overwrite replaces a directory; never one that holds the input, the current or the home directory."""
        here = os.path.realpath(self.path)
        precious = [(p, "the log being read") for p in keep]
        precious += [(os.getcwd(), "the current directory"), (os.path.expanduser("~"), "your home directory")]
        for other, what in precious:
            other = os.path.realpath(other)
            if other == here or other.startswith(here.rstrip(os.sep) + os.sep):
                raise CompilescopeError(f"refusing to replace {path}: it contains {what}; choose another output directory")

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
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
        try:
            fd = os.open(target, flags, 0o644)
            with os.fdopen(fd, "wb") as f:
                if isinstance(content, str):
                    content = content.encode("utf-8", "replace")
                if isinstance(content, bytes):
                    f.write(content)
                    self.bytes += len(content)
                else:
                    for chunk in content:
                        f.write(chunk)
                        self.bytes += len(chunk)
        except OSError as exc:
            # e.g. ELOOP: a symbolic link was planted where a report file goes; or a full disk.
            raise CompilescopeError(f"cannot write {target}: {exc.strerror or exc}") from None
        self.files += 1
        return target

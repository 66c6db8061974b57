"""The only code that writes report files: confined to the output directory."""

from __future__ import annotations

import os
import shutil
from typing import Iterable

from ..errors import CompilescopeError

REPORT_MARKER = "compile_directory.json"


class OutputDir:
    """A fresh output directory; every write stays inside it and follows no symlink."""

    def __init__(self, path: str, overwrite: bool):
        self.path = os.path.abspath(path)
        if os.path.islink(self.path):
            raise CompilescopeError(f"{path} is a symbolic link; choose another output directory")
        if os.path.exists(self.path):
            if not os.path.isdir(self.path):
                raise CompilescopeError(f"{path} exists and is not a directory")
            if os.listdir(self.path):
                if not overwrite:
                    raise CompilescopeError(f"{path} already exists; pass --overwrite to replace it")
                shutil.rmtree(self.path)  # rmtree does not follow symlinks inside
        os.makedirs(self.path, exist_ok=True)
        self._dirs: set[str] = {self.path}
        self.files = 0
        self.bytes = 0

    def resolve(self, relpath: str) -> str:
        """The absolute path for relpath, or an error if it would leave the directory."""
        parts = relpath.replace("\\", "/").split("/")
        if os.path.isabs(relpath) or any(p in ("", ".", "..") for p in parts):
            raise CompilescopeError(f"refusing to write {relpath!r}: outside the output directory")
        return os.path.join(self.path, *parts)

    def _ensure_dir(self, directory: str) -> None:
        if directory in self._dirs:
            return
        self._ensure_dir(os.path.dirname(directory))
        if os.path.islink(directory):
            raise CompilescopeError(f"refusing to write through symbolic link {directory}")
        os.makedirs(directory, exist_ok=True)
        self._dirs.add(directory)

    def write(self, relpath: str, content: str | bytes | Iterable[bytes]) -> str:
        target = self.resolve(relpath)
        self._ensure_dir(os.path.dirname(target))
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
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
        self.files += 1
        return target

    def copy_from(self, relpath: str, chunks: Iterable[bytes]) -> str:
        return self.write(relpath, chunks)

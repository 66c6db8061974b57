"""Reads the user's source files the analyses need into the model (model/source_files.SourceFiles): each path once,
bounded (location.read_local_bytes: a regular file of at most MAX_READ_BYTES; the path is the log's, any text).
Which paths: the analyses' own pure functions list them (op_mutations.calling_files.files_wanted, user_kernels.files_wanted, ...),
from the trace and from files read before; analyze() asks for them in turn and passes the files on."""

from __future__ import annotations

from collections.abc import Iterable

from ..location import python_lines, read_local_bytes
from ..model.source_files import MAX_READ_BYTES, SourceFiles, SourceText


def read_source_file(path: str) -> SourceText:
    read = read_local_bytes(path, MAX_READ_BYTES)
    if read.data is None:
        return SourceText(None, read.refused)
    return SourceText(python_lines(read.data.decode("utf-8", "replace")), "", read.size)  # (as read_local_lines)


def read_source_files(paths: Iterable[str] = (), known: SourceFiles | None = None,
                      first_of: Iterable[Iterable[str]] = ()) -> SourceFiles:
    """known, with each of paths it lacks read; and, of each group of first_of (where Python looks for one module, in
    its order), the candidates up to the first that is a regular file (those before it are kept as not here, so the
    analysis finds the same one)."""
    files = SourceFiles(known.read if known is not None else None)
    for path in paths:
        if path not in files.read:
            files.read[path] = read_source_file(path)
    for candidates in first_of:
        for path in candidates:
            if path not in files.read:
                files.read[path] = read_source_file(path)
            if files.is_regular_file(path):
                break
    return files

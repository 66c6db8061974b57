"""Errors that reach the user as one line and an exit code (never a traceback)."""

from __future__ import annotations


class CompilescopeError(Exception):
    """A problem with the user's input or environment, explained in one line."""

    exit_code = 2

    def __init__(self, message: str, exit_code: int | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class OutputExistsError(CompilescopeError):
    """An output that exists, which only the overwrite option may replace: said in the words of the command line
    (`--overwrite`); the Python API says `overwrite=True` instead (api.py)."""

    def __init__(self, path: str, option: str = "--overwrite"):
        super().__init__(f"{path} already exists; pass {option} to replace it")
        self.path = path

    def for_python(self) -> OutputExistsError:
        return OutputExistsError(self.path, "overwrite=True")

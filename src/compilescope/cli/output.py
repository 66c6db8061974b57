"""OutputDir lives in compilescope/output.py (the API and capture write through it too); the CLI's name for it."""

from ..output import BACKGROUND_LIMIT, OutputDir

__all__ = ["BACKGROUND_LIMIT", "OutputDir"]

"""OutputDir lives in compilescope/output.py (the API and capture write through it too); the CLI's name for it."""

from ..output import OutputDir, check_output_dir

__all__ = ["OutputDir", "check_output_dir"]

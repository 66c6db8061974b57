"""OutputDir lives in compilescope/output.py (the API and capture write through it too); the CLI's name for it."""

from ..output import BIG_PAGE, OutputDir, check_output_dir

__all__ = ["BIG_PAGE", "OutputDir", "check_output_dir"]

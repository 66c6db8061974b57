"""compilescope: make torch.compile understandable.

Read any TORCH_TRACE log (no torch needed) and write a compilation report.
"""

from __future__ import annotations

__version__ = "0.1.0"

"""compilescope: make torch.compile understandable.

Read any TORCH_TRACE log (no torch needed) and write a compilation report.

    import compilescope
    trace = compilescope.load("trace_dir")               # the trace model
    compilescope.report("trace_dir", out="report")        # the HTML report
    with compilescope.capture(out="report") as cap:       # trace a block (needs torch)
        compiled(x)
    cap.report()
"""

from __future__ import annotations

__version__ = "0.1.0"

from .api import load, report  # noqa: E402
from .capture import capture  # noqa: E402

__all__ = ["__version__", "capture", "load", "report"]

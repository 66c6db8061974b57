"""compilescope: make torch.compile understandable.

Read any TORCH_TRACE log (no torch needed) and write a compilation report.

    import compilescope
    trace = compilescope.load("trace_dir")               # the trace model
    results = compilescope.analyze("trace_dir")          # every analysis (saved with results.to_json())
    compilescope.report("trace_dir", out="report")        # the HTML report
    with compilescope.capture(out="report") as cap:       # trace a block (needs torch)
        compiled(x)
    cap.report()
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["CodecError", "CompilescopeError", "OutputExistsError", "Results", "Trace", "__version__", "analyze", "capture",
           "load", "report"]

# Imported on first use: `compilescope LOG` starts a new interpreter per report, and
# start-up time is most of the cost of a small log.
_LAZY = {"load": ".api", "analyze": ".api", "report": ".api", "capture": ".capture",
         "Results": ".analyses.results", "Trace": ".model.trace",
         # what the functions above raise: one line for the user (OutputExistsError: out exists; CodecError: a saved
         # analysis that cannot be loaded), catchable as compilescope.CompilescopeError
         "CompilescopeError": ".errors", "OutputExistsError": ".errors", "CodecError": ".model.codec"}


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

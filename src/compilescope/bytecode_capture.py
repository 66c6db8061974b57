"""Record, into the TORCH_TRACE log itself, the code Dynamo runs instead of each compiled frame, and why CUDA graphs
skipped a graph at its first run.

torch logs the original and modified bytecode of resume functions only. This registers a bytecode hook
(``torch._dynamo.convert_frame.register_bytecode_hook``, the one depyf uses) that writes, for every
compiled frame, three ordinary ``artifact`` events under the frame's compile id:

- ``compilescope_original_bytecode``: ``dis`` of the code Dynamo compiled;
- ``compilescope_transformed_bytecode``: ``dis`` of the code it runs instead;
- ``compilescope_transformed_code``: that code decompiled to Python (or, outside the decompiled subset,
  the annotated disassembly), with a first line saying which.

And a logging handler on Inductor's CUDA graph logger writes ``compilescope_cudagraph_skip`` for each "skipping
cudagraphs due to ..." warning: torch decides some skips (a mutated input) when the graph first runs, outside any
compile, and says why on stderr only.

The log stays a plain TORCH_TRACE log (tlparse lists them as artifacts). Stdlib and torch only: the
child process of ``compilescope run`` loads this file by path (src/compilescope/_child/sitecustomize.py).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

def _stdlib_module(name: str):
    """compilescope.decompile.<name>, or the same file loaded by path (a child interpreter without compilescope)."""
    try:
        return importlib.import_module(f"compilescope.decompile.{name}")
    except ImportError:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "decompile", f"{name}.py")
        spec = importlib.util.spec_from_file_location(f"_compilescope_decompile_{name}", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"compilescope.decompile.{name}: no module at {path}") from None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module


_names = _stdlib_module("recorded")
ORIGINAL, TRANSFORMED_BYTECODE, TRANSFORMED, HEADER, CUDAGRAPH_SKIP = (
    _names.ORIGINAL, _names.TRANSFORMED_BYTECODE, _names.TRANSFORMED, _names.HEADER, _names.CUDAGRAPH_SKIP)
# Inductor's CUDA graph artifact logger (torch/_inductor/cudagraph_utils.py: getArtifactLogger(__name__, "cudagraphs")).
CUDAGRAPH_LOGGER = "torch._inductor.cudagraph_utils.__cudagraphs"


def _decompile():
    return _stdlib_module("core").decompile


def transformed_source(code) -> str:
    result = _decompile()(code)
    what = (f"decompiled from Python {sys.version_info[0]}.{sys.version_info[1]} bytecode" if result.ok
            else "not decompiled: annotated disassembly")
    return f"{HEADER}{code.co_name} ({what})\n{result.source}"


def _write(name: str, text: str) -> None:
    import torch._logging

    torch._logging.trace_structured("artifact", metadata_fn=lambda: {"name": name, "encoding": "string"},
                                    payload_fn=lambda: text)


def hook(original, transformed):
    import dis

    try:
        _write(ORIGINAL, dis.Bytecode(original).dis())
        _write(TRANSFORMED_BYTECODE, dis.Bytecode(transformed).dis())
        _write(TRANSFORMED, transformed_source(transformed))
    except Exception:  # noqa: BLE001 - recording must never break the user's compile
        pass
    return None  # Dynamo keeps its own code


def install():
    """Register the hook and the CUDA graph recorder; returns the handle (``.remove()`` undoes both)."""
    from torch._dynamo.convert_frame import register_bytecode_hook

    return _Both(register_bytecode_hook(hook), record_cudagraph_skips())


class _Both:
    def __init__(self, *handles):
        self.handles = handles

    def remove(self) -> None:
        for h in self.handles:
            h.remove()


def record_cudagraph_skips():
    """Write each CUDA graph skip warning into the trace; returns the handle (``.remove()`` stops it)."""
    import json
    import logging

    class Recorder(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            try:
                message = record.getMessage()
                if not message.startswith("skipping cudagraphs"):
                    return
                import torch._logging

                payload = json.dumps({"message": message, "time": record.created})
                torch._logging.trace_structured(
                    "artifact", metadata_fn=lambda: {"name": CUDAGRAPH_SKIP, "encoding": "json"},
                    payload_fn=lambda: payload, expect_trace_id=False)
            except Exception:  # noqa: BLE001 - recording must never break the user's program
                pass

    logger = logging.getLogger(CUDAGRAPH_LOGGER)
    recorder = Recorder(logging.WARNING)
    logger.addHandler(recorder)

    class Handle:
        def remove(self) -> None:
            logger.removeHandler(recorder)

    return Handle()

"""Record the code Dynamo runs instead of each compiled frame, into the TORCH_TRACE log itself.

torch logs the original and modified bytecode of resume functions only. This registers a bytecode hook
(``torch._dynamo.convert_frame.register_bytecode_hook``, the one depyf uses) that writes, for every
compiled frame, three ordinary ``artifact`` events under the frame's compile id:

- ``compilescope_original_bytecode``: ``dis`` of the code Dynamo compiled;
- ``compilescope_transformed_bytecode``: ``dis`` of the code it runs instead;
- ``compilescope_transformed_code``: that code decompiled to Python (or, outside the decompiled subset,
  the annotated disassembly), with a first line saying which.

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
ORIGINAL, TRANSFORMED_BYTECODE, TRANSFORMED, HEADER = (
    _names.ORIGINAL, _names.TRANSFORMED_BYTECODE, _names.TRANSFORMED, _names.HEADER)


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
    """Register the hook; returns the handle (``.remove()`` unregisters it)."""
    from torch._dynamo.convert_frame import register_bytecode_hook

    return register_bytecode_hook(hook)

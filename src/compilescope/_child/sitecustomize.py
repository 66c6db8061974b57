"""Loaded by the programs `compilescope run` starts (this directory is put first on PYTHONPATH).

When torch._dynamo.convert_frame is imported, registers compilescope's bytecode hook and its warning
recorders (bytecode_capture.py, loaded by path: the child's interpreter need not have compilescope installed); gives each
rank of a distributed job its own fresh Inductor cache. Then runs the sitecustomize this one shadows, if any. Imports nothing heavy: a program that never imports torch pays nothing.
"""

import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_TARGET = "torch._dynamo.convert_frame"


def _install(module):
    try:
        path = os.path.join(os.path.dirname(_HERE), "bytecode_capture.py")
        spec = importlib.util.spec_from_file_location("_compilescope_bytecode_capture", path)
        capture = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = capture
        spec.loader.exec_module(capture)
        module.register_bytecode_hook(capture.hook)
        capture.record_cudagraph_skips()
        capture.record_warnings()
        capture.record_crashes()
        capture.tell_recorders()
    except Exception as exc:  # noqa: BLE001 - never break the user's program
        print(f"compilescope: transformed code not recorded ({exc})", file=sys.stderr)


class _Finder:
    def find_spec(self, name, path=None, target=None):
        if name != _TARGET:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_install(module):
            exec_module(module)
            _install(module)

        spec.loader.exec_module = exec_then_install
        return spec


if os.environ.get("COMPILESCOPE_BYTECODE_HOOK") == "1":
    sys.meta_path.insert(0, _Finder())

# `compilescope run --fresh-cache`: a rank of a distributed job (torchrun sets RANK in each worker's environment, before
# torch is imported) compiles into a cache of its own, so its log has every graph it compiled (runner.child_env).
_per_rank_cache, _rank = os.environ.get("COMPILESCOPE_PER_RANK_CACHE"), os.environ.get("RANK", "")
if _per_rank_cache and _rank.isascii() and _rank.isdigit() and os.environ.get("TORCHINDUCTOR_CACHE_DIR") == _per_rank_cache:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(_per_rank_cache, f"rank_{int(_rank)}")


def _chain():
    """Run the sitecustomize module this file hides, as Python would have."""
    rest = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.origin and os.path.abspath(spec.origin) != os.path.abspath(__file__):
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


_chain()

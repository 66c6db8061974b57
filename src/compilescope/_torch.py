"""Whether torch is installed, and the one line that says how to install it.

Reading a log never needs torch; running or capturing a program does.
"""

from __future__ import annotations

import importlib.util

from .errors import CompilescopeError

TORCH_VERSION = "2.13.0"
INSTALL_HINT = f"pip install torch=={TORCH_VERSION}  (or: pip install 'compilescope[torch]')"


def torch_available() -> bool:
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


def require_torch(what: str) -> None:
    """Raise a one-line CompilescopeError if torch cannot be imported."""
    if not torch_available():
        raise CompilescopeError(f"{what} needs torch, which is not installed here; install it with: {INSTALL_HINT}")

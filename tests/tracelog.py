"""Write small synthetic TORCH_TRACE logs in torch's exact format (for unit tests)."""

from __future__ import annotations

import hashlib
import json


def envelope(obj: dict, payload: str | None = None, pathname: str = "torch/_dynamo/x.py") -> str:
    obj = dict(obj)
    if payload is not None:
        obj["has_payload"] = hashlib.md5(payload.encode()).hexdigest()
    line = f"V1121 09:58:36.209000 2267 {pathname}:1] {json.dumps(obj)}\n"
    if payload is not None:
        line += "".join(f"\t{p}\n" for p in payload.split("\n"))
    return line


def cid(frame: int, fcid: int = 0, attempt: int = 0) -> dict:
    return {"frame_id": frame, "frame_compile_id": fcid, "attempt": attempt}

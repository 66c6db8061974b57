"""Build a large, valid TORCH_TRACE log by concatenating real ones.

Each copy gets its frame ids, compiled-autograd ids and interned-string indices
shifted past the previous copies, so compile ids stay distinct and stack frames
keep pointing at their own strings. Payloads are copied byte for byte, so every
md5 still matches.

    python bench/make_big_log.py OUT.log --times 20 SOURCE.log [SOURCE.log ...]
    python bench/make_big_log.py OUT.log --size-mb 90 SOURCE.log ...
"""

from __future__ import annotations

import argparse
import json
import os
import re

PREFIX = re.compile(rb"^(.*?:\d+\] )(\{.*)$")  # glog prefix up to "file.py:LINE] ", then the JSON envelope


def _shift_stack(stack, str_offset):
    if isinstance(stack, list):
        for frame in stack:
            if isinstance(frame, dict) and isinstance(frame.get("filename"), int):
                frame["filename"] += str_offset


def copy_log(src: str, out, frame_offset: int, str_offset: int) -> tuple[int, int]:
    """Append src to out with ids shifted; return the largest frame id and string index seen."""
    max_frame = max_str = -1
    with open(src, "rb") as f:
        for line in f:
            if not line.endswith(b"\n"):
                line += b"\n"  # a log cut without its final newline must not glue onto the next copy
            if line.startswith(b"\t"):
                out.write(line)
                continue
            m = PREFIX.match(line.rstrip(b"\n"))
            if m is None:
                out.write(line)
                continue
            obj = json.loads(m.group(2))
            if isinstance(obj.get("frame_id"), int):
                max_frame = max(max_frame, obj["frame_id"])
                obj["frame_id"] += frame_offset
            if isinstance(obj.get("compiled_autograd_id"), int):
                obj["compiled_autograd_id"] += frame_offset
            if "str" in obj and isinstance(obj["str"], list) and len(obj["str"]) == 2:
                max_str = max(max_str, obj["str"][1])
                obj["str"][1] += str_offset
            if isinstance(obj.get("dynamo_start"), dict):
                _shift_stack(obj["dynamo_start"].get("stack"), str_offset)
            _shift_stack(obj.get("stack"), str_offset)
            out.write(m.group(1) + json.dumps(obj).encode() + b"\n")
    return max_frame, max_str


def build(out_path: str, sources: list[str], times: int | None = None, size_mb: float | None = None) -> None:
    frame_offset = str_offset = 0
    copies = 0
    with open(out_path, "wb") as out:
        while True:
            for src in sources:
                max_frame, max_str = copy_log(src, out, frame_offset, str_offset)
                frame_offset += max_frame + 1
                str_offset += max_str + 1
            copies += 1
            if times is not None and copies >= times:
                break
            if size_mb is not None and out.tell() >= size_mb * 1e6:
                break


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("sources", nargs="+")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--times", type=int)
    group.add_argument("--size-mb", type=float)
    args = parser.parse_args()
    build(args.out, args.sources, args.times, args.size_mb)
    print(f"{args.out}: {os.path.getsize(args.out) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()

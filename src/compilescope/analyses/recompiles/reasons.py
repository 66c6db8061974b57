"""torch's recompile reasons ("0/1: n == 1  # code  # path:line in fn ...") read into FailedGuards, and which kind of
change (CHANGE_LABELS) each failed guard checks."""

from __future__ import annotations

import re

import orjson

from ..user_locations import UserLocation, last_user_frame
from . import FailedGuard

ARTIFACT = "recompile_reasons"
# Patterns below are strings, compiled on first use by re (and kept in its cache): most logs recompile nothing,
# and compiling them all at import was ~1 ms of every report's start-up.
_PREFIX = r"(?s)^\s*(?P<cid>(?:!\d+/)?\d+/\d+):\s?(?P<body>.*)$"
_CLIPPED_LOC = r"#\s+(?P<file>[^\s#]+):(?P<line>\d{1,9}) in (?P<func>[\w<>.]+)"
_CONSTANT = r"^[\w.\[\]'\"()]+ (?:==|!=) (?:-?\d+(?:\.\d+)?|'[^']*'|\"[^\"]*\"|True|False|None)$"
# Dynamo's CONSTANT_MATCH on a Python bool (`padded == False`): an int's is `n == 1`, so True/False is a bool's.
# What torch appends to a guard its 0/1 specialization made (the range [2, ...] of a dynamic size), in its comment.
_SIZE_ONE = "due to 0/1 specialization"
FLAG = r"^(?P<name>[\w.\[\]'\"()]+) (?:==|!=) (?:True|False)$"
# A torch.optim optimizer's hyperparameter, as a guard names it: self.param_groups[0]['lr'], L['opt'].param_groups[1]...
_OPTIMIZER_SETTING = r"\bparam_groups\[\d{1,9}\]\[['\"](?P<key>\w{1,100})['\"]\]"

# What changed between calls, from the guard text torch writes (C++ guard messages and Python guard code).
CHANGE_RULES: tuple[tuple[str, str], ...] = (
    # A traceable tensor subclass's metadata (what its __tensor_flatten__ returned beside the inner tensors' names),
    # checked by a Python lambda torch names `___check_metadata_<id>_c<compile id>` (torch/_dynamo/guards.py).
    ("subclass_metadata", r"___check_metadata_"),
    ("size", r"size mismatch"),
    ("stride", r"stride mismatch"),
    ("dtype", r"dtype mismatch"),
    ("requires_grad", r"requires_grad mismatch"),
    ("device", r"(?i)device (?:index )?mismatch"),
    ("rank", r"rank mismatch"),
    ("dispatch_keys", r"dispatch key set mismatch"),
    ("global_state", r"(?i)GLOBAL_STATE|global state"),
    ("type", r"___check_type_id|type mismatch|isinstance\("),
    ("object_identity", r"___check_obj_id|\bid\("),
    # A function's **kwargs: Dynamo guards on how many keyword arguments a call passes and which
    # (`len(kwargs) == 6`, `not ___dict_contains('return_dict', kwargs)`); before "length", which is a list's.
    ("keyword_arguments", r"\blen\((?:L\[['\"])?kwargs\b|___dict_contains\([^)]*,\s*(?:L\[['\"])?kwargs\b"),
    # Its *args: how many positional arguments a call passes (`len(args) == 2`: model(ids), where generate() calls
    # model(input_ids=...)); also before "length", which would say to pad a list.
    ("positional_arguments", r"^\s*len\((?:L\[['\"])?args(?:['\"]\])?\)\s*=="),
    # Dynamo's LENGTH_CHECK is `len(x) == N`, and `not x` where N is 0 (an empty list or dict).
    ("length", r"\blen\(|^\s*not [GL]\["),
    ("shape_guard", r"\.size\(\)|\.stride\(\)|\.storage_offset\(\)|\bs\d+\b"),
)


def classify_change(guard: str) -> str:
    for change, pattern in CHANGE_RULES:
        if re.search(pattern, guard):
            return change
    if re.match(FLAG, guard.strip()):
        return "flag"
    if re.match(_CONSTANT, guard.strip()):
        return "optimizer_setting" if re.search(_OPTIMIZER_SETTING, guard) else "constant"
    return "other"


def parse_reason(text: str, frame_offset: int = 0) -> FailedGuard:
    """One failed guard of torch's recompile reasons ("0/1: n == 1  # code  # path:line in fn ..."). frame_offset: what
    the reader added to the frame ids of the recompile's reset epoch (ingest/resets.py); the "N/M:" prefix is in torch's
    numbering, counted from 0 again after torch._dynamo.reset(), and the failed guard is of a compile of that epoch
    (reset() dropped every earlier one), so its frame is numbered on by the same offset."""
    m = re.match(_PREFIX, text)
    cid, body = (f"[{_placed(m['cid'], frame_offset)}]", m["body"]) if m else (None, text)
    head, _, user_stack = body.partition("User stack trace:")
    guard_line = head.strip().splitlines()[0] if head.strip() else ""
    guard, _, comment = guard_line.partition("  #")
    location = last_user_frame("User stack trace:" + user_stack, ("User stack trace:",)) if user_stack else None
    loc = re.search(_CLIPPED_LOC, comment)
    if loc:
        # `# return x + n  # ork/main/x.py:29 in h (_dynamo/...)`: the code, then the (front-clipped) path.
        code = comment[:loc.start()].strip(" #") or None
        if location is None:
            location = UserLocation(loc["file"], int(loc["line"]), loc["func"], code)
        elif location.code is None and code:
            location = UserLocation(location.filename, location.line, location.function, code)
    guard = guard.strip()
    change = classify_change(guard)
    if change == "shape_guard" and _SIZE_ONE in comment:
        # `2 <= x.size()[1]`: torch's comment says the guard is its own, the range of a dynamic size, not a branch of
        # the user's code (the line it names is only the size's first use).
        change = "size_one"
    return FailedGuard(cid, guard, change, location, text)


def _placed(logged: str, frame_offset: int) -> str:
    """A compile id torch wrote ("0/1") as the reader placed it; compiled autograd's ("!0/1/0") is never renumbered."""
    if not frame_offset or logged.startswith("!"):
        return logged
    frame, _, compile_ = logged.partition("/")
    return f"{int(frame) + frame_offset}/{compile_}"


def reasons_payload(text: str) -> list[str]:
    """The recompile_reasons payload as a list: JSON list, JSON string, or (torch's single reason) bare text."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return [text] if text.strip() else []
    if isinstance(value, list):
        return [str(v) for v in value]
    return [str(value)]

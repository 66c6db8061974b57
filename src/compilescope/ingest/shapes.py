"""The types handlers accept for the fields analyses read, so a wrong type costs one value, not the report.

A log is untrusted: any value may have any JSON type. Handlers check the fields that
analyses use against these shapes once, at ingest; a value of the wrong type is dropped
(and listed as a warning) or, where the record means nothing without it, the record is
skipped as a handler error. Analyses can then trust the model's types.
"""

from __future__ import annotations

SCALAR = (str, int, float)  # hashable, printable: ids such as a chromium event's pid and tid
TEXT = (str,)
NUMBER = (int, float)


def is_a(value: object, types: tuple) -> bool:
    return isinstance(value, types) and not (isinstance(value, bool) and bool not in types)


class Shape(dict):
    """field -> the types it may have; with checks: (field, its types, the exact types that pass at once), made
    once with the shape (what decoded JSON holds is nearly always one of the exact types: one set lookup)."""

    def __init__(self, fields: dict[str, tuple]) -> None:
        super().__init__(fields)
        self.checks = [(k, types, frozenset(types)) for k, types in fields.items()]


# compilation_metrics fields read by analyses, and the types they must have when present.
METRIC_FIELDS = Shape({
    "co_name": TEXT, "co_filename": TEXT, "co_firstlineno": (int,), "fail_type": TEXT, "fail_reason": TEXT,
    "fail_user_frame_filename": TEXT, "fail_user_frame_lineno": (int,), "restart_reasons": (list,),
    "graph_op_count": (int,), "graph_node_count": (int,), "graph_input_count": (int,), "guard_count": (int,),
    "shape_env_guard_count": (int,), "entire_frame_compile_time_s": NUMBER, "backend_compile_time_s": NUMBER,
    "inductor_compile_time_s": NUMBER, "code_gen_time_s": NUMBER, "dynamo_cumulative_compile_time_us": NUMBER,
    "aot_autograd_cumulative_compile_time_us": NUMBER, "inductor_cumulative_compile_time_us": NUMBER,
    "start_time": NUMBER, "start_time_us": NUMBER, "duration_us": NUMBER, "frame_key": TEXT,
    "non_compliant_ops": (list,), "compliant_custom_ops": (list,), "config_suppress_errors": (bool,),
    "is_forward": (bool,), "cache_size": (int,), "accumulated_cache_size": (int,),
})

# A chromium event's fields; pid and tid name a track (a dict key), name and ph are matched as text.
CHROMIUM_FIELDS = Shape({
    "name": TEXT, "ph": TEXT, "cat": TEXT, "ts": NUMBER, "dur": NUMBER, "pid": SCALAR, "tid": SCALAR, "args": (dict,),
})


def bad_fields(obj: dict, fields: Shape) -> list[str]:
    """The fields of obj present (and not null) with a type other than their shape's."""
    get = obj.get
    bad: list[str] = []
    # is_a inlined: this runs for every chromium event. A plain loop, not a comprehension (a function made and
    # called per event), and first the exact types the shape allows. (bool cannot be subclassed: "type is bool"
    # is isinstance.)
    for k, types, exact in fields.checks:
        v = get(k)
        if v is not None and type(v) not in exact and (not isinstance(v, types) or (type(v) is bool and bool not in types)):
            bad.append(k)
    return bad


def without_bad_fields(obj: dict, fields: Shape) -> tuple[dict, list[str]]:
    bad = bad_fields(obj, fields)
    if not bad:
        return obj, bad
    return {k: v for k, v in obj.items() if k not in bad}, bad

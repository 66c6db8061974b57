"""Names of the artifacts compilescope's hooks write into a TORCH_TRACE log (bytecode_capture.py).

Stdlib only, no imports: the hook in a child process loads this file by path.
"""

ORIGINAL = "compilescope_original_bytecode"  # `dis` of the code Dynamo compiled
TRANSFORMED_BYTECODE = "compilescope_transformed_bytecode"  # `dis` of the code it runs instead
TRANSFORMED = "compilescope_transformed_code"  # that code decompiled (or the annotated disassembly)
ARTIFACTS = (ORIGINAL, TRANSFORMED_BYTECODE, TRANSFORMED)
# A CUDA graph skip Inductor decided when the graph first ran: torch says why on stderr only. JSON payload:
# {"message": the warning, "time": seconds since the epoch (the log's chromium events' clock)}.
CUDAGRAPH_SKIP = "compilescope_cudagraph_skip"
# A warning torch printed to stderr only (a Python warning raised in torch's code, or a torch logger's WARNING or
# ERROR record). JSON payload: {"message", "category" (a warning's class name) or "level" (a log record's),
# "logger" (a log record's), "source" ("torch/_inductor/lowering.py:2633": where torch warned), "time" (seconds since
# the epoch), "traced" (the user frames Dynamo was tracing, outermost first, each [file, line, function]) and
# "stack" (the innermost user frames that were running, outermost first)}. Under the compile id it was printed in.
WARNING = "compilescope_warning"
# What compilescope's hooks record in this process, written with the first compiled frame's transformed code:
# {"records": ["transformed_code", "warnings", "cudagraph_skips", "crashes"]}. Without it no warning is no proof that torch
# printed none (a log of an older compilescope, or of a process whose recorders were not installed).
RECORDERS = "compilescope_recorders"
# A crash in native code (a segfault, an abort) that killed the process: Python's faulthandler writes the stack of each
# thread to CRASH_FILE_PREFIX + pid + ".txt" in the trace directory, and `compilescope run` appends it to that process's
# log when the process has died (runner.attach_crash_reports). String payload: faulthandler's text, as it wrote it.
CRASH = "compilescope_crash"
CRASH_FILE_PREFIX = "compilescope_crash_"
# An uncaught Python exception that ended the process (sys.excepthook) or a thread (threading.excepthook) is written to
# the same crash file, so that run appends it and the reader takes it as it does a native crash: a line
# EXCEPTION_HEADER + JSON {"type" (qualified class name), "message" (str(exc), bounded), "thread" (null: the main
# thread), "frames" (innermost first, each [file, line, function], bounded), "omitted" (frames left out)}, then the
# traceback as Python prints it (bounded), for people. A process can record several (threads, then the main thread).
EXCEPTION_HEADER = "Uncaught Python exception: "
HEADER = "# compilescope: the code torch.compile runs instead of "  # + co_name + " (what it is)"

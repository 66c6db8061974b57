"""The guards a compilation installed, as torch prints their tree (`dynamo_cpp_guards_str`): what a guard line says.

Each guard line ends with the line of code that made it (`+- KIND: check  # code  # path:N in fn`); a GuardManager
line names the object it guards and that object's type (`+- GuardManager: source=L['x'], accessed_by=...,
type=<class 'torch.Tensor'>`). The source pages place every installed guard on its line.
"""

from __future__ import annotations

from ..lazy_regex import lazy_compile

GUARDS_ARTIFACT = "dynamo_cpp_guards_str"
# A guard with the user line that made it: `+- KIND: check  # code  # path:N in fn`
GUARD_LINE = lazy_compile(r"\+- (?P<guard>[A-Z_]+: .*?)\s+# (?P<code>.*?)\s+# (?P<file>\S+?):(?P<line>\d+) in (?P<func>\S+)\s*$")
# What every GUARD_LINE ends with, found without its lazy groups: most guard lines that do not match end in a
# "(HINT: ...)" after the path, and GUARD_LINE backtracks over such a line for ~25 us (GPT-2: 6 of its 8 ms).
GUARD_TAIL = lazy_compile(r"# \S+?:\d+ in \S+\s*$")

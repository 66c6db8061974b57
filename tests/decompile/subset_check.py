"""Round trip of plain functions written in Dynamo's subset, on whichever Python runs this file.

Used by test_subset.py with the test interpreter, and runnable by hand with other CPython versions
(no dependencies: it loads the decompiler's module file directly):  python3.12 tests/decompile/subset_check.py
Prints one line per function and exits non-zero on any mismatch.
"""

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORE = os.path.join(HERE, "..", "..", "src", "compilescope", "decompile", "core.py")


def load_core():
    spec = importlib.util.spec_from_file_location("_cs_decompile_core", CORE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class Box:
    def __init__(self):
        self.items = [1, 2]
        self.n = 0


def calls(a, b, *, c=3):
    d = max(a, b, key=abs)
    return sorted([a, b, c], reverse=True), d


def branches(x, y):
    if x > y:
        z = x - y
    else:
        z = y - x
    if z is None:
        return -1
    return z * 2


def stack_games(a, b):
    t = (a, b)
    p, q = t
    lst = [p, q]
    lst[0:1] = [q]
    del lst[-1]
    lst += [a]
    return lst, {"k": a, "j": b}, t[1:], -a, not b


def attrs(box):
    box.n = box.n + 1
    box.items.append(box.n)
    return box.items[-1]


def starcall(f, args, kwargs):
    return f(*args, **kwargs)


def returns_in_both(x):
    if x:
        return "yes"
    else:
        return "no"


CASES = [
    (calls, [((-5, 2), {}), ((1, 2), {"c": 0})]),
    (branches, [((3, 1), {}), ((1, 3), {})]),
    (stack_games, [((1, 0), {}), ((2, 5), {})]),
    (starcall, [((max, (1, 7, 3), {}), {}), ((sorted, ([3, 1],), {"reverse": True}), {})]),
    (returns_in_both, [((1,), {}), ((0,), {})]),
]


def main() -> int:
    core = load_core()
    failures = 0
    for fn, calls_ in CASES:
        d = core.decompile(fn.__code__)
        if not d.ok:
            print(f"{fn.__name__}: not decompiled: {d.problem}")
            failures += 1
            continue
        namespace = dict(globals())
        exec(compile(d.source, "<decompiled>", "exec"), namespace)
        # Defaults live on the function, not its code (Dynamo's frames arrive with every argument bound).
        namespace[fn.__name__].__defaults__ = fn.__defaults__
        namespace[fn.__name__].__kwdefaults__ = fn.__kwdefaults__
        for args, kwargs in calls_:
            if namespace[fn.__name__](*args, **kwargs) != fn(*args, **kwargs):
                print(f"{fn.__name__}{args}: differs\n{d.source}")
                failures += 1
        print(f"{fn.__name__}: ok")
    box, other = Box(), Box()
    d = core.decompile(attrs.__code__)
    namespace = dict(globals())
    exec(compile(d.source, "<decompiled>", "exec"), namespace)
    if not d.ok or (namespace["attrs"](box), box.items, box.n) != (attrs(other), other.items, other.n):
        print("attrs: differs")
        failures += 1
    print(f"python {sys.version_info[0]}.{sys.version_info[1]}: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

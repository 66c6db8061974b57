"""The recompiles analysis compares each recompile's guard tree with the trees of the compiles torch tried: a value
a tree pins that is no count where a count was read, and a frame recompiled thousands of times.

Commands run in a child with a memory cap and a time limit (test_round_two.compilescope).
"""

from __future__ import annotations

import json

from ..tracelog import cid, envelope
from .test_round_two import compilescope

_START = {"dynamo_start": {"stack": [{"line": 3, "name": "f", "filename": "/x/prog.py"}]}}
_METRICS = {"co_name": "f", "co_filename": "/x/prog.py", "co_firstlineno": 3}
_HEAD = ("| +- GuardManager: source=L['self']._modules['head'], accessed_by=DictGetItemGuardAccessor('head'), "
         "type=<class 'torch.nn.modules.linear.Linear'>, tag_safe=(False, False)\n")
# A hook on head, as module_state.log's [0/1] guards it (its DictGuardManager, one ValueManager per hook).
_ONE_HOOK = ("| | +- DictGuardManager: source=L['self']._modules['head']._forward_hooks, accessed_by=DictGetItemGuard"
             "Accessor('_forward_hooks'), type=<class 'collections.OrderedDict'>, tag_safe=(False, False)\n"
             "| | | +- KeyValueManager pair at index=0\n"
             "| | | | +- ValueManager: GuardManager: source=L['self']._modules['head']._forward_hooks[11], "
             "type=<class 'function'>, tag_safe=(False, False)\n")


def _compile(f, k: int, tree: str | None, reasons: str | None = None) -> None:
    f.write(envelope({**_START, **cid(0, k)}))
    if reasons is not None:
        f.write(envelope({"artifact": {"name": "recompile_reasons", "encoding": "string"}, **cid(0, k)}, reasons))
    if tree is not None:
        f.write(envelope({"artifact": {"name": "dynamo_cpp_guards_str", "encoding": "string"}, **cid(0, k)},
                         "TREE_GUARD_MANAGER:\n+- RootGuardManager\n" + tree))
    f.write(envelope({"compilation_metrics": _METRICS, **cid(0, k)}))


def test_a_hooks_dict_pinned_by_value_is_not_read_as_a_count(tmp_path):
    # Each tree pins self's and head's _forward_hooks by value (== x, then == y): no number of hooks, which int()
    # took for one where no hook guard of the module counted them (self's: "internal error: ValueError", no summary
    # at all). [0/1]'s tree guards one hook of head and [0/0]'s none: the one change, from the hook guards alone.
    log = tmp_path / "hooks.log"
    pinned = ("| +- EQUALS_MATCH: L['self']._forward_hooks == {v}\n"
              "| +- EQUALS_MATCH: L['self']._modules['head']._forward_hooks == {v}\n")
    with log.open("w") as f:
        _compile(f, 0, _HEAD + pinned.format(v="x"))
        _compile(f, 1, _HEAD + pinned.format(v="y") + _ONE_HOOK, "0/0: L['n'] == 1")
    r = compilescope("summary", "--json", log)
    assert r.returncode in (0, 1), r.stderr.decode()[-2000:]
    [frame] = json.loads(r.stdout)["recompiles"]["frames"]
    [step] = frame["steps"]
    assert step["guard"] == "L['n'] == 1"
    assert [(c["source"], c["before"], c["after"], c["kind"]) for c in step["also_changed"]] == [
        ("L['self']._modules['head']._forward_hooks", "0", "1", "hook")]
    assert any(a.startswith("A hook was registered on self.head") for a in frame["advice"])


def test_a_list_growing_at_every_recompile_is_told_in_linear_time(tmp_path):
    # One frame recompiled 2,000 times, each for the list it appends to (history.append, a side effect torch logs),
    # each tree pinning the new length. The length history was made again for each failed length guard, each time
    # reading every compile's tree and every recompile's guards: cubic (3,000 recompiles: 273 s; now 7 s). torch lists
    # every cached compile's failure at each recompile; here only the newest's, to keep the log linear in size.
    n = 2_000
    log = tmp_path / "lengths.log"
    side = ("Mutating object of type list (source name: G['history'])\n\n      File \"/x/prog.py\", line 5, in f\n"
            "        history.append(1)\n")
    with log.open("w") as f:
        for k in range(n):
            f.write(envelope({**_START, **cid(0, k)}))
            if k:
                f.write(envelope({"artifact": {"name": "recompile_reasons", "encoding": "string"}, **cid(0, k)},
                                 f"0/{k - 1}: len(G['history']) == {k - 1}"))
            f.write(envelope({"artifact": {"name": "dynamo_cpp_guards_str", "encoding": "string"}, **cid(0, k)},
                             "TREE_GUARD_MANAGER:\n+- RootGuardManager\n"
                             f"| +- LENGTH_CHECK: len(G['history']) == {k}  # history.append(1)  # x/prog.py:5 in f\n"))
            f.write(envelope({"artifact": {"name": "dynamo_side_effects", "encoding": "string"}, **cid(0, k)}, side))
            f.write(envelope({"compilation_metrics": _METRICS, **cid(0, k)}))
    r = compilescope("summary", "--json", log)
    assert r.returncode in (0, 1), r.stderr.decode()[-2000:]
    [frame] = json.loads(r.stdout)["recompiles"]["frames"]
    assert [s["guard"] for s in frame["steps"]] == [f"len(G['history']) == {k}" for k in range(n - 1)]
    # the trees pin no module mode or requires_grad, the same in each: every recompile avoidable
    assert frame["avoidable"] == [f"[0/{k}]" for k in range(1, n)] and frame["unknown"] == []
    [advice] = frame["advice"]
    # the lengths each tree pinned, 0 to n - 1, said by the first three and the last two, not all 2,000
    assert (f"which changed at each of the {n - 1} recompiles ([0/1] to [0/{n - 1}]: 0 → 1 → 2 → … → {n - 2} → "
            f"{n - 1}), the last one too, so it keeps changing") in advice

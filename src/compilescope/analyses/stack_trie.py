"""The stack trie: every user stack that triggered a compile, merged by common prefix."""

from __future__ import annotations

import os
from dataclasses import field

from ..model.ids import CompileId
from ..model.trace import Frame, Trace
from ..model.records import dataclass
from .user_locations import is_framework_file


@dataclass
class StackTrieNode:
    """A frame of the stack trie (None at the root), with the compiles whose stack ends there."""

    frame: Frame | None  # None at the root
    children: list[StackTrieNode] = field(default_factory=list)
    # Compiles whose stack ends at this frame, with their status.
    compiles: list[tuple[CompileId | None, str]] = field(default_factory=list)
    # Children by frame, for building; not part of the value (rebuilt from children, e.g. when loaded).
    _index: dict[tuple[str, int, str], StackTrieNode] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.children and not self._index:
            self._index = {(c.frame.filename, c.frame.line, c.frame.name): c for c in self.children if c.frame}

    def child(self, frame: Frame) -> StackTrieNode:
        key = (frame.filename, frame.line, frame.name)
        node = self._index.get(key)
        if node is None:
            node = self._index[key] = StackTrieNode(frame)
            self.children.append(node)
        return node

    def to_json(self) -> dict:
        return {
            "frame": self.frame.to_json() if self.frame else None,
            "compiles": [[str(cid) if cid else None, status] for cid, status in self.compiles],
            "children": [c.to_json() for c in self.children],
        }


def build_stack_trie(trace: Trace, statuses: dict[CompileId | None, str]) -> StackTrieNode:
    """Stacks from dynamo_start, each ending at the compile id it started."""
    root = StackTrieNode(None)
    for entry in trace.compiles.values():
        if entry.stack is not None:
            _insert(root, entry.stack).compiles.append((entry.compile_id, statuses[entry.compile_id]))
    return root


@dataclass
class OutsideStacks:
    """The stacks of events logged outside any compilation (their "stack" context key) that run through the same
    frames of the user's code: one line of the report each, the user's innermost frame first. Such a stack is
    mostly torch's (a torch.export's: 15 to 75 frames, the user's two or three of them), so the whole stacks, as a
    trie, come folded after it."""

    user: list[Frame]  # the user's frames, outermost first (not torch's, Python's or generated code's); empty: none
    stacks: int  # distinct stacks (the model keeps each once)
    deepest: int  # frames in the deepest of them
    trie: StackTrieNode  # the whole stacks

    @property
    def innermost(self) -> Frame | None:
        return self.user[-1] if self.user else None

    @property
    def folded(self) -> str:
        """What the fold holds: "4 stacks, up to 27 frames each", "1 stack of 73 frames"."""
        if self.stacks == 1:
            return f"1 stack of {self.deepest} frames"
        return f"{self.stacks} stacks, up to {self.deepest} frames each"

    @property
    def callers(self) -> str:
        """The user's frames that led to the innermost, innermost first: "via export_encoder (export_constraints.py:52),
        <module> (export_constraints.py:72)"; empty where there are none."""
        frames = [f"{f.name} ({os.path.basename(f.filename)}:{f.line})" for f in self.user[-2::-1]]
        return f"via {', '.join(frames)}" if frames else ""


def outside_stacks(trace: Trace) -> list[OutsideStacks]:
    """Stacks of events logged outside any compilation, by the user's frames they run through, in log order."""
    groups: dict[tuple[tuple[str, int, str], ...], OutsideStacks] = {}
    for stack in trace.unknown_stacks:
        user = [f for f in stack if not is_framework_file(f.filename)]
        key = tuple((f.filename, f.line, f.name) for f in user)
        group = groups.get(key)
        if group is None:
            group = groups[key] = OutsideStacks(user, 0, 0, StackTrieNode(None))
        group.stacks += 1
        group.deepest = max(group.deepest, len(stack))
        _insert(group.trie, stack)
    return list(groups.values())


def _insert(root: StackTrieNode, stack: list[Frame]) -> StackTrieNode:
    node = root
    for frame in stack:
        node = node.child(frame)
    return node

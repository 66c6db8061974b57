"""The stack trie: every user stack that triggered a compile, merged by common prefix."""

from __future__ import annotations

from dataclasses import field

from ..model.ids import CompileId
from ..model.trace import Frame, Trace
from ..model.records import dataclass


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


def build_unknown_stack_trie(trace: Trace) -> StackTrieNode:
    """Stacks of events logged outside any compilation (their "stack" context key)."""
    root = StackTrieNode(None)
    for stack in trace.unknown_stacks:
        _insert(root, stack)
    return root


def _insert(root: StackTrieNode, stack: list[Frame]) -> StackTrieNode:
    node = root
    for frame in stack:
        node = node.child(frame)
    return node

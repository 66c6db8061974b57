"""Make the decompiled text read like code: a temporary used once, by the next statement, moves into it.

Only when that cannot change what runs: the temporary is assigned once and read once in the whole function,
the reading statement is the next statement of the same block (comments aside), and everything that
statement evaluates before the temporary is a plain name or a constant (so nothing with an effect runs
between the two places). The round-trip tests run the simplified code in place of Dynamo's.
"""

from __future__ import annotations

import ast
import re

_TEMP_PREFIX = "_cs_t"
_TEMP = re.compile(rf"^{_TEMP_PREFIX}\d+$")


def _events(node: ast.AST, out: list[ast.AST]) -> None:
    """Nodes in the order Python completes them (children first, left to right)."""
    if isinstance(node, (ast.Name, ast.Constant)):
        out.append(node)
        return
    if isinstance(node, ast.Assign):
        _events(node.value, out)
        for target in node.targets:
            _target(target, out)
        return
    if isinstance(node, ast.AugAssign):
        _events(node.target, out)
        _events(node.value, out)
        out.append(node)
        return
    if isinstance(node, ast.Delete):
        for target in node.targets:
            if isinstance(target, (ast.Attribute, ast.Subscript)):
                _target(target, out)
        out.append(node)
        return
    if isinstance(node, ast.Call):
        _events(node.func, out)
        for a in node.args:
            _events(a, out)
        for kw in node.keywords:
            _events(kw.value, out)
        out.append(node)
        return
    if isinstance(node, ast.Dict):
        for k, v in zip(node.keys, node.values):
            if k is not None:
                _events(k, out)
            _events(v, out)
        out.append(node)
        return
    if isinstance(node, ast.Slice):
        for part in (node.lower, node.upper, node.step):
            if part is not None:
                _events(part, out)
        return
    if isinstance(node, (ast.Expr, ast.Return)):
        if node.value is not None:
            _events(node.value, out)
        out.append(node)
        return
    if isinstance(node, ast.Raise):
        for part in (node.exc, node.cause):
            if part is not None:
                _events(part, out)
        out.append(node)
        return
    if isinstance(node, ast.If):
        _events(node.test, out)
        out.append(node)
        return
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop)):
            _events(child, out)
    out.append(node)


def _target(target: ast.AST, out: list[ast.AST]) -> None:
    """An assignment target: what it evaluates (object, key), then the store."""
    if isinstance(target, ast.Attribute):
        _events(target.value, out)
    elif isinstance(target, ast.Subscript):
        _events(target.value, out)
        _events(target.slice, out)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            _target(elt, out)
    out.append(target)


class _Replace(ast.NodeTransformer):
    def __init__(self, name: str, value: ast.expr):
        self.name, self.value = name, value

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return self.value if node.id == self.name and isinstance(node.ctx, ast.Load) else node


def _parse_line(text: str) -> ast.stmt | None:
    stripped = text.strip()
    if stripped.startswith("#") or stripped in ("else:",) or stripped.startswith("def ") or stripped.startswith("nonlocal "):
        return None
    try:
        if stripped.startswith("if ") and stripped.endswith(":"):
            return ast.parse(stripped + " pass").body[0]
        return ast.parse(stripped).body[0]
    except SyntaxError:
        return None


def _unparse(stmt: ast.stmt) -> str:
    if isinstance(stmt, ast.If):
        return f"if {ast.unparse(stmt.test)}:"
    return ast.unparse(stmt)


def simplify(source: str) -> str:
    lines = source.splitlines()
    counts: dict[str, int] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and _TEMP.match(node.id):
            counts[node.id] = counts.get(node.id, 0) + 1
    changed = True
    while changed:
        changed = False
        for i in range(len(lines) - 1, -1, -1):
            if _TEMP_PREFIX not in lines[i]:  # (no temporary's assignment: most lines, not parsed)
                continue
            stmt = _parse_line(lines[i])
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                    and _TEMP.match(stmt.targets[0].id) and counts.get(stmt.targets[0].id) == 2):
                continue
            name = stmt.targets[0].id
            indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
            j = i + 1
            while j < len(lines) and lines[j].startswith(indent + "#"):
                j += 1
            if j >= len(lines) or lines[j][: len(lines[j]) - len(lines[j].lstrip())] != indent:
                continue
            use = _parse_line(lines[j])
            if use is None:
                continue
            events: list[ast.AST] = []
            _events(use, events)
            position = next((k for k, e in enumerate(events) if isinstance(e, ast.Name) and e.id == name
                             and isinstance(e.ctx, ast.Load)), None)
            if position is None or not all(isinstance(e, (ast.Name, ast.Constant)) and not isinstance(e.ctx if isinstance(e, ast.Name) else None, ast.Store)
                                           for e in events[:position]):
                continue
            new = _Replace(name, stmt.value).visit(use)
            lines[j] = indent + _unparse(ast.fix_missing_locations(new))
            del lines[i]
            counts[name] = 0
            changed = True
    return "\n".join(lines) + "\n"

"""The custom ops a module's source defines (custom_op_sources): torch.library.custom_op and triton_op with their
mutates_args, a Library's define (a schema string) with the functions registered as its implementation; and what a
name given as mutates_args holds, where the file settles it (named_value)."""

from __future__ import annotations

import ast
import functools
import json
import re

from . import CUSTOM_OP, DEFINE, MAX_MODULE_NODES, MAX_VALUE_CHARS, TRITON_OP, UNKNOWN, OpSource, literal_names
from .op_bodies import body_writes, tensor_arguments, triton_kernel_stores, unparsed


def _is_custom_op(func: ast.expr) -> bool:
    """custom_op(...) or triton_op(...): both declare mutates_args, custom_op's way."""
    return _called_name(func) in (CUSTOM_OP, TRITON_OP)


# A schema string's argument: `Tensor(a!) buf`, `float limit=1.0`, `Tensor[] xs`
_SCHEMA_ARGUMENT = re.compile(r"^(?P<type>\S+)\s+(?P<name>[A-Za-z_]\w*)\s*(?:=.*)?$")


def schema_arguments(schema: str) -> list[tuple[str, bool, bool]] | None:
    """(name, a Tensor, marked written: an alias annotation with `!`, `Tensor(a!)`) of each argument of a schema
    string, "scale_into(Tensor x, Tensor(a!) buf) -> Tensor" (or without its name: "(Tensor x) -> Tensor"); None
    where it does not read as one."""
    opened = schema.find("(")
    if opened < 0 or len(schema) > 4000:
        return None
    depth, at, parts = 0, opened + 1, []
    for i in range(opened + 1, len(schema)):
        if schema[i] in "([":
            depth += 1
        elif schema[i] in ")]":
            if depth == 0:
                parts.append(schema[at:i])
                break
            depth -= 1
        elif schema[i] == "," and depth == 0:
            parts.append(schema[at:i])
            at = i + 1
    else:
        return None
    found: list[tuple[str, bool, bool]] = []
    for part in parts:
        part = part.strip()
        if part in ("*", ""):
            continue
        argument = _SCHEMA_ARGUMENT.match(part)
        if argument is None:
            return None
        kind = argument["type"]
        found.append((argument["name"], kind.startswith("Tensor"), "!" in kind))
    return found


def _string(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _called_name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def library_definitions(tree: ast.Module, text: str) -> list[tuple[str, ast.expr, int]]:
    """(op "mylib::scale_into", the schema as written, its line) of each op the module defines with a schema string:
    `lib.define("scale_into(Tensor x, Tensor buf) -> Tensor")` on `lib = torch.library.Library("mylib", "DEF")` (or
    "FRAGMENT"), `torch.library.define("mylib::scale_into", "(Tensor x, Tensor buf) -> Tensor")`. A schema that is no
    string literal (an f-string, a name) is kept as written: the log then tells how torch took it. An overload
    (`lib.define("scale.out(...)")`, `torch.library.define("mylib::scale.out", ...)`) is the op "mylib::scale.out",
    as the log's graphs name its calls (`mylib.scale.out`: graph_calls._op_name)."""
    libraries = _libraries(tree)
    found: list[tuple[str, ast.expr, int]] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _called_name(node.func) == "define" and node.args):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in libraries:
            schema = node.args[0]
            literal = _string(schema)
            name = overload_name(literal.split("(", 1)[0].strip() if literal is not None else _schema_name(schema))
            if name:
                found.append((f"{libraries[func.value.id]}::{name}", schema, node.lineno))
        elif len(node.args) > 1 and (qualified := _qualified(_string(node.args[0]))):
            found.append((qualified, node.args[1], node.lineno))
    return found


_OVERLOAD_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?")


def overload_name(name: str | None) -> str | None:
    """An op's name as a definition or registration writes it, "scale" or an overload's "scale.out" (the default
    overload's "scale.default" is "scale", as the log's graphs name it: graph_calls._op_name); None where it is no
    such name."""
    if name is None or _OVERLOAD_NAME.fullmatch(name) is None:
        return None
    return name[:-len(".default")] if name.endswith(".default") else name


def _qualified(name: str | None) -> str | None:
    """"mylib::scale.out" of a qualified name (`"mylib::scale.out"`, `"mylib::scale"`); None where it is none."""
    namespace, _, op = (name or "").partition("::")
    return f"{namespace}::{op}" if namespace.isidentifier() and (op := overload_name(op) or "") else None


def _schema_name(schema: ast.expr) -> str | None:
    """The op's name at the start of an f-string schema (`f"scale_into(Tensor x, {BUF}) -> Tensor"`)."""
    if isinstance(schema, ast.JoinedStr) and schema.values and (first := _string(schema.values[0])) and "(" in first:
        return first.split("(", 1)[0].strip()
    return None


def _libraries(tree: ast.Module) -> dict[str, str]:
    """name -> namespace of each `name = torch.library.Library("mylib", "DEF")` in the module."""
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Call) and _called_name(node.value.func) == "Library" \
                and (namespace := _string(node.value.args[0] if node.value.args else None)):
            found[node.targets[0].id] = namespace
    return found


def library_impls(tree: ast.Module) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef | str]]:
    """(op, its function or the function's name) of each implementation registered for a defined op:
    `@torch.library.impl(lib, "scale_into", "CPU")`, `@torch.library.impl("mylib::scale_into", "cpu")`,
    `@torch.library.register_kernel("mylib::scale_into", "cpu")`, `lib.impl("scale_into", fn, "CPU")`. Not those
    for Meta or a fake kernel: they compute shapes, not what ran."""
    libraries = _libraries(tree)

    def op_of(call: ast.Call, skip_library: bool) -> str | None:
        args = list(call.args)
        if skip_library and args and isinstance(args[0], ast.Name) and args[0].id in libraries:
            namespace, name = libraries[args[0].id], overload_name(_string(args[1] if len(args) > 1 else None))
            return f"{namespace}::{name}" if name else None
        return _qualified(_string(args[0] if args else None))

    def for_meta(call: ast.Call, at: int) -> bool:
        key = next((k.value for k in call.keywords if k.arg in ("dispatch_key", "types", "device_types")),
                   call.args[at] if len(call.args) > at else None)
        return "meta" in (_string(key) or "").lower()

    found: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef | str]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and _called_name(decorator.func) in ("impl", "register_kernel"):
                    with_library = bool(decorator.args) and isinstance(decorator.args[0], ast.Name) \
                        and decorator.args[0].id in libraries
                    op = op_of(decorator, with_library)
                    if op is not None and not for_meta(decorator, 2 if with_library else 1):
                        found.append((op, node))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "impl" \
                and isinstance(node.func.value, ast.Name) and node.func.value.id in libraries and len(node.args) > 1 \
                and isinstance(node.args[1], ast.Name) and (name := _string(node.args[0])) and not for_meta(node, 2):
            op = _qualified(name) if "::" in name else (
                f"{libraries[node.func.value.id]}::{plain}" if (plain := overload_name(name)) else None)
            if op is not None:
                found.append((op, node.args[1].id))
    return found


def custom_op_sources(text: str) -> dict[str, list[OpSource]]:
    """The custom ops a module's source defines, by name ("mylib::scale"): with torch.library.custom_op or triton_op
    (mutates_args declares the writes), or with a schema string (Library.define: `Tensor(a!)` declares them) and a
    function registered as its implementation. Several where the name is defined more than once (each branch of an
    `if`). {} where it does not parse."""
    if not any(word in text for word in ("custom_op", "triton_op", "define")):
        return {}
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    registrations: list[tuple[ast.Call, ast.FunctionDef | ast.AsyncFunctionDef | str]] = []
    try:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.setdefault(node.name, []).append(node)
                registrations.extend((d, node) for d in node.decorator_list
                                     if isinstance(d, ast.Call) and _is_custom_op(d.func))
            elif isinstance(node, ast.Call) and _is_custom_op(node.func):
                fn = node.args[1] if len(node.args) > 1 else next(
                    (k.value for k in node.keywords if k.arg == "fn"), None)
                if isinstance(fn, ast.Name):
                    registrations.append((node, fn.id))
        kernels = triton_kernel_stores(tree) if "triton_op" in text else {}
        defined = library_definitions(tree, text) if "define" in text else []
        impls = library_impls(tree) if defined else []
    except RecursionError:
        return {}
    found: dict[str, list[OpSource]] = {}
    for call, target in registrations:
        name = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "name"), None)
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str) and "::" in name.value):
            continue
        form = TRITON_OP if _called_name(call.func) == TRITON_OP else CUSTOM_OP
        declared = next((k.value for k in call.keywords if k.arg == "mutates_args"), None)
        names = literal_names(declared)
        for impl in functions.get(target, []) if isinstance(target, str) else [target]:
            pointers: dict[str, list[str]] = {}
            try:
                writes = body_writes(impl, kernels=kernels if form == TRITON_OP else None, pointers=pointers)
            except RecursionError:
                continue
            value = named_value(tree, text, declared.id, call.lineno) if isinstance(declared, ast.Name) else None
            args = impl.args
            parameters = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
            found.setdefault(name.value, []).append(OpSource(
                name.value, impl.name, unparsed(declared) if declared is not None else "",
                frozenset(parameters) if names == {UNKNOWN} else names, call.lineno, writes, value or "",
                parameters, form, pointers))
    # (grouped once: a definitions x registrations scan is quadratic in a file of many lib.define/lib.impl pairs)
    impls_of: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    for registered, target in impls:
        impls_of.setdefault(registered, []).extend(functions.get(target, []) if isinstance(target, str) else [target])
    writes_of: dict[tuple[int, tuple[str, ...]], list[tuple[str, int]]] = {}
    for op, schema, line in defined:
        _add_defined(found, op, schema, line, text, impls_of.get(op, []), writes_of)
    return found


def _add_defined(found: dict[str, list[OpSource]], op: str, schema: ast.expr, line: int, text: str,
                 impls: list[ast.FunctionDef | ast.AsyncFunctionDef],
                 writes_of: dict[tuple[int, tuple[str, ...]], list[tuple[str, int]]]) -> None:
    """The OpSource of each implementation of an op defined by a schema string. Its arguments are the schema's, in
    order (the call in the graph passes them so), named as the function names them; a schema that is no literal
    declares what the log says (None), its Tensor arguments then those annotated, or every one. writes_of: the
    body_writes of each (function, tensors) already walked (one function registered for many ops is walked once)."""
    literal = _string(schema)
    arguments = schema_arguments(literal) if literal is not None else None
    said = _segment(text, schema) or unparsed(schema)
    for impl in impls:
        args = impl.args
        parameters = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
        if arguments is not None:
            if len(arguments) != len(parameters):
                continue  # (not this schema's function: torch would have refused the call)
            tensors = [p for p, (_, tensor, _) in zip(parameters, arguments) if tensor]
            declared: frozenset[str] | None = frozenset(p for p, (_, _, w) in zip(parameters, arguments) if w)
        else:
            annotated = tensor_arguments(impl)
            tensors, declared = annotated or parameters, None
        key = (id(impl), tuple(tensors))
        if key not in writes_of:
            try:
                writes_of[key] = body_writes(impl, tensors)
            except RecursionError:
                continue
        found.setdefault(op, []).append(OpSource(op, impl.name, said, declared, line, list(writes_of[key]), "",
                                                 parameters, DEFINE))
_ENV_GETTERS = frozenset(("os.environ.get", "environ.get", "os.getenv", "getenv"))


def _segment(text: str, node: ast.expr) -> str | None:
    """The source's own text of a node (its quotes kept: `{"x"}`, which ast.unparse would write `{'x'}`), bounded: one
    line's, as ast.get_source_segment cuts it (columns are UTF-8 offsets), from the file split once (_utf8_lines), not
    once a node as get_source_segment splits it."""
    end, start, stop = getattr(node, "end_lineno", None), getattr(node, "col_offset", None), \
        getattr(node, "end_col_offset", None)
    if end != node.lineno or start is None or stop is None or stop - start > 4 * MAX_VALUE_CHARS:
        return None  # (several lines, or longer than said: not quoted)
    lines = _utf8_lines(text)
    if not 0 < end <= len(lines):
        return None
    try:
        found = lines[end - 1][start:stop].decode()
    except UnicodeDecodeError:
        return None
    return found if len(found) <= MAX_VALUE_CHARS else None


_LINE_END = re.compile(rb"\r\n|\r|\n")  # where Python ends a line (not at a form feed: ast.get_source_segment's)


@functools.lru_cache(maxsize=1)
def _utf8_lines(text: str) -> list[bytes]:
    """The text's lines in UTF-8, split once for every node of one file (the cache's key: the same str object, whose
    hash Python keeps); one file's at a time."""
    return _LINE_END.split(text.encode(errors="surrogatepass"))


def _env_condition(test: ast.expr) -> str | None:
    """`MUTOP_VARIANT is "fixed"` of `os.environ.get("MUTOP_VARIANT") == "fixed"` (or os.getenv, os.environ[...],
    with != as well); None for any other test."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq))):
        return None
    left, right = test.left, test.comparators[0]
    if not (isinstance(right, ast.Constant) and isinstance(right.value, str) and len(right.value) <= MAX_VALUE_CHARS):
        return None
    variable = None
    if isinstance(left, ast.Call) and ast.unparse(left.func) in _ENV_GETTERS and left.args and len(left.args) <= 2:
        if len(left.args) == 2:
            return None  # (a default equal to the constant would make "unset" match: not said)
        variable = left.args[0]
    elif isinstance(left, ast.Subscript) and ast.unparse(left.value) in ("os.environ", "environ"):
        variable = left.slice
    if not (isinstance(variable, ast.Constant) and isinstance(variable.value, str)
            and len(variable.value) <= MAX_VALUE_CHARS and variable.value.isidentifier()):
        return None
    verb = "is" if isinstance(test.ops[0], ast.Eq) else "is not"
    return f"{variable.value} {verb} {json.dumps(right.value)}"  # (escaped: the file is untrusted)


def named_value(tree: ast.Module, text: str, name: str, before: int) -> str | None:
    """What the module-level name given as mutates_args holds, where the file settles it: bound once, at the top level,
    before the custom_op line, to a literal (`MUTATES = ()`) or a choice of two (`{"x"} if FIXED else ()`, or
    `if FIXED: MUTATES = {"x"} / else: MUTATES = ()`); a condition that is a name bound once to an environment
    comparison is said as that (`MUTOP_VARIANT is "fixed"`): 'line 21: {"x"} if MUTOP_VARIANT is "fixed", else ()'.
    None where anything else binds the name (an import, a function's argument, `global`, a loop)."""
    stores = _bindings(tree, name)
    if stores is None:
        return None
    choice = _top_level_choice(tree, name, before)
    if choice is None or stores != choice[0]:
        return None
    _, lines, chosen, otherwise, test = choice
    chosen_text = _segment(text, chosen) if literal_names(chosen) is not None else None
    if chosen_text is None:
        return None
    where = f"line {lines[0]}" if len(lines) == 1 else f"lines {lines[0]}-{lines[-1]}"
    if otherwise is None or test is None:
        return f"{where}: {chosen_text}"
    other_text = _segment(text, otherwise) if literal_names(otherwise) is not None else None
    condition = _condition(tree, text, test)
    if other_text is None or condition is None:
        return None
    return f"{where}: {chosen_text} if {condition}, else {other_text}"


def _condition(tree: ast.Module, text: str, test: ast.expr) -> str | None:
    """The condition said plainly where the environment decides it (directly, or through a name bound once at the top
    level), else as written."""
    if (said := _env_condition(test)) is not None:
        return said
    if isinstance(test, ast.Name) and _bindings(tree, test.id) == 1:
        bound = [s for s in tree.body if isinstance(s, ast.Assign) and len(s.targets) == 1
                 and isinstance(s.targets[0], ast.Name) and s.targets[0].id == test.id]
        if len(bound) == 1 and (said := _env_condition(bound[0].value)) is not None:
            return said
    return _segment(text, test)


def _bindings(tree: ast.Module, name: str) -> int | None:
    """How many times the module binds name as a plain name (an assignment's, augmented assignment's, loop's, with's or
    walrus's target, or del: each a Name not loaded); None where it is bound otherwise (import, a function's argument,
    global) or the module is too big to walk."""
    count = 0
    for walked, node in enumerate(ast.walk(tree)):
        if walked > MAX_MODULE_NODES:
            return None
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            count += 1
        elif isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return None
        elif isinstance(node, ast.alias) and (node.asname or node.name.split(".")[0]) == name:
            return None
        elif isinstance(node, ast.arg) and node.arg == name:
            return None
    return count


def _assigned(statements: list[ast.stmt], name: str) -> list[ast.Assign]:
    return [s for s in statements if isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name) and s.targets[0].id == name]


def _top_level_choice(tree: ast.Module, name: str, before: int
                      ) -> tuple[int, list[int], ast.expr, ast.expr | None, ast.expr | None] | None:
    """(bindings, lines, value, other value, condition) of the one top-level statement binding name before line
    `before`: `name = v`, `name = a if c else b`, or `if c: name = a / else: name = b`; None otherwise."""
    found: list[tuple[int, list[int], ast.expr, ast.expr | None, ast.expr | None]] = []
    for statement in tree.body:
        if statement.lineno >= before:
            break
        if (plain := _assigned([statement], name)):
            value = plain[0].value
            if isinstance(value, ast.IfExp):
                found.append((1, [statement.lineno], value.body, value.orelse, value.test))
            else:
                found.append((1, [statement.lineno], value, None, None))
        elif isinstance(statement, ast.If):
            body, orelse = _assigned(statement.body, name), _assigned(statement.orelse, name)
            if len(body) == 1 and len(orelse) == 1:
                found.append((2, [body[0].lineno, orelse[0].lineno], body[0].value, orelse[0].value, statement.test))
            elif body or orelse:
                return None
    return found[0] if len(found) == 1 else None

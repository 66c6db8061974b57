"""What a custom op's body writes into: the ast heuristic of the package's doc on one function (body_writes: its
Tensor arguments' aliases and the writes through them), and the stores of a module's Triton kernels
(triton_kernel_stores) that a triton_op's launches write through."""

from __future__ import annotations

import ast


MAX_BODY_NODES = 20_000  # ast nodes walked per op body
# Methods ending in `_` that write no data
_NOT_WRITES = frozenset(("requires_grad_", "share_memory_", "retain_grad_", "record_stream_", "resize_as_"))
# Methods and functions through which a name still refers to the argument's memory
_VIEWS = frozenset(("numpy", "detach", "view", "view_as", "reshape", "flatten", "squeeze", "unsqueeze", "transpose",
                    "permute", "expand", "narrow", "select", "as_strided", "contiguous", "t", "unflatten", "ravel",
                    "asarray", "from_numpy", "swapaxes", "movedim", "unfold", "diagonal", "split", "chunk"))
_VIEW_ATTRIBUTES = frozenset(("data", "T", "mT", "H", "mH", "real", "imag", "flat"))
_NUMPY_IN_PLACE = frozenset(("fill", "sort", "put", "partition", "itemset", "resize"))
# The modules whose in-place functions take the tensor written first (`torch.relu_(x)`, `F.relu_(x)`,
# `torch.Tensor.add_(x, 1)`, `torch.ops.aten.add_.Tensor(x, 1)`): a receiver that is any other name is the thing
# written (`out.copy_(x)`, `stats.update_(x)` write into out and stats, not into x)
_MODULES = frozenset(("torch", "F", "nn", "np", "numpy", "Tensor"))
# Methods whose results are views of their receiver, several at once (`a, b = x.unbind(0)`)
_SPLITS = frozenset(("unbind", "split", "chunk", "tensor_split", "hsplit", "vsplit", "dsplit"))


def _root(node: ast.expr, aliases: dict[str, tuple[str, bool]]) -> tuple[str, bool] | None:
    """(argument, through NumPy) of an expression that refers to an argument's memory: `x`, `x.numpy()`,
    `x[0].view(-1)`, `np.asarray(x)`; None otherwise."""
    numpy = False
    for _ in range(64):  # (a chain this long is no kernel's: bounded all the same)
        if isinstance(node, ast.Name):
            found = aliases.get(node.id)
            return (found[0], found[1] or numpy) if found else None
        if isinstance(node, (ast.Subscript, ast.NamedExpr)):
            node = node.value
        elif isinstance(node, ast.Attribute) and node.attr in _VIEW_ATTRIBUTES:
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _VIEWS:
            numpy = numpy or node.func.attr in ("numpy", "asarray")
            # `x.numpy()`: the receiver; `np.asarray(x)`, `torch.from_numpy(a)`: the first argument
            receiver = node.func.value
            if node.func.attr in ("asarray", "from_numpy") or (isinstance(receiver, ast.Name) and receiver.id in
                                                                ("np", "numpy", "torch")):
                if not node.args:
                    return None
                node = node.args[0]
            else:
                node = receiver
        else:
            return None
    return None


def tensor_arguments(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    args = fn.args
    return [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)
            if a.annotation is not None and "Tensor" in ast.unparse(a.annotation)]


def _body_nodes(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
    """The body's nodes in source order, not those of functions, lambdas or classes defined in it; bounded."""
    out: list[ast.AST] = []
    stack: list[ast.AST] = list(reversed(fn.body))
    while stack and len(out) < MAX_BODY_NODES:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        out.append(node)
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    # (an assignment's value is read before its target is bound: `a = x.numpy()` visits the Name `a` first)
    return sorted(out, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))


def _module_path(node: ast.expr) -> bool:
    """`torch`, `torch.Tensor`, `F`, `np`, `torch.ops.aten.add_`: a module's (or class's) path, not a local value."""
    for _ in range(16):
        if not isinstance(node, ast.Attribute):
            break
        node = node.value
    return isinstance(node, ast.Name) and node.id in _MODULES


def _in_place(name: str) -> bool:
    return name.endswith("_") and not name.startswith("_") and name not in _NOT_WRITES


def _bound_names(target: ast.expr) -> list[str]:
    """The names a binding's target binds: `x`; `x, (y, *z)`."""
    names: list[str] = []
    stack = [target]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name):
            names.append(node.id)
        elif isinstance(node, (ast.Tuple, ast.List)):
            stack.extend(node.elts)
        elif isinstance(node, ast.Starred):
            stack.append(node.value)
    return names


def body_writes(fn: ast.FunctionDef | ast.AsyncFunctionDef, tensors: list[str] | None = None,
                kernels: dict[str, tuple[list[str], frozenset[str]]] | None = None,
                pointers: dict[str, list[str]] | None = None) -> list[tuple[str, int]]:
    """(argument, line) of each write into a Tensor argument's memory the body makes (the package doc's heuristic).
    tensors: the Tensor arguments where the schema says (a defined op's function has no annotations); kernels: the
    module's Triton kernels (triton_kernel_stores), whose launches write into what they pass a stored pointer;
    pointers, where given, gets for each argument so written the kernels' parameters it is passed as (`x_ptr`)."""
    aliases: dict[str, tuple[str, bool]] = {name: (name, False) for name in (
        tensor_arguments(fn) if tensors is None else tensors)}
    writes: list[tuple[str, int]] = []
    launchers: dict[str, list[str]] = {}  # a name bound to wrap_triton(kernel) -> the kernels it may launch
    positions: dict[str, dict[str, int]] = {}  # a launched kernel -> where each of its parameters is
    pointed = {(argument, p) for argument, written_as in (pointers or {}).items() for p in written_as}

    def wrote(target: ast.expr, line: int) -> None:
        found = _root(target, aliases)
        if found is not None:
            writes.append((found[0], line))

    def bind(target: ast.expr, value: ast.expr | None, line: int) -> None:
        """`target = value`: a name bound to what refers to an argument's memory is its alias; any other binding of
        a name ends its alias (`x = x.clone()`, `x, y = x.clone(), y.clone()`)."""
        if isinstance(target, ast.Name):
            found = _root(value, aliases) if value is not None else None
            if found is not None:
                aliases[target.id] = found
            else:
                aliases.pop(target.id, None)
        elif isinstance(target, ast.Subscript) or (isinstance(target, ast.Attribute) and target.attr == "data"):
            wrote(target.value, line)
        elif isinstance(target, (ast.Tuple, ast.List)):
            elements = target.elts
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(elements) and not any(
                    isinstance(e, ast.Starred) for e in (*elements, *value.elts)):
                for element, element_value in zip(elements, value.elts):  # (each pair, in order)
                    bind(element, element_value, line)
                return
            # `a, b = x.unbind(0)`: each name a view of x; any other value: none the argument
            split = None
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _SPLITS:
                receiver = value.func.value
                split = _root(value.args[0] if _module_path(receiver) and value.args else receiver, aliases)
            for element in elements:
                if isinstance(element, (ast.Subscript, ast.Attribute)):
                    bind(element, None, line)
            for name in _bound_names(target):
                if split is not None:
                    aliases[name] = split
                else:
                    aliases.pop(name, None)
        elif isinstance(target, ast.Starred):
            bind(target.value, None, line)

    for node in _body_nodes(fn):
        if isinstance(node, ast.Assign):
            if kernels and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                launched = _launched_kernels(node.value, kernels, launchers)
                if launched:
                    launchers[node.targets[0].id] = launched
                else:
                    launchers.pop(node.targets[0].id, None)
            for target in node.targets:
                bind(target, node.value, node.lineno)
        elif isinstance(node, ast.AugAssign):
            target = node.target
            wrote(target.value if isinstance(target, (ast.Subscript, ast.Attribute)) else target, node.lineno)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            bind(node.target, node.value, node.lineno)
        elif isinstance(node, ast.NamedExpr):
            bind(node.target, node.value, node.lineno)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            # `for t in xs:` each t is xs's (a list of tensors, or a tensor's rows); `for x in [x.clone()]:` not x's
            found = _root(node.iter, aliases)
            for name in _bound_names(node.target):
                if found is not None:
                    aliases[name] = found
                else:
                    aliases.pop(name, None)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                for name in _bound_names(item.optional_vars) if item.optional_vars is not None else []:
                    aliases.pop(name, None)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                for name in _bound_names(target):
                    aliases.pop(name, None)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            aliases.pop(node.name, None)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for imported in node.names:
                aliases.pop((imported.asname or imported.name).partition(".")[0], None)
        elif isinstance(node, ast.Call):
            func = node.func
            if kernels and isinstance(func, ast.Subscript):  # `wrap_triton(kernel)[grid](x, out, n)`
                for kernel in _launched_kernels(func.value, kernels, launchers):
                    parameters, stored = kernels[kernel]
                    given = dict(zip(parameters, node.args)) | {k.arg: k.value for k in node.keywords if k.arg}
                    if kernel not in positions:
                        positions[kernel] = {p: i for i, p in enumerate(parameters)}
                    order = positions[kernel]
                    # (what the launch passes, in the kernel's order: not each of the kernel's parameters, which made
                    # launches x parameters; a keyword the kernel does not take is none of its pointers)
                    for parameter in sorted((p for p in given if p in order), key=order.__getitem__):
                        if parameter in stored:
                            wrote(given[parameter], node.lineno)
                            if pointers is not None and (found := _root(given[parameter], aliases)) is not None:
                                if (found[0], parameter) not in pointed:  # (a set: a list's `in` is a scan)
                                    pointed.add((found[0], parameter))
                                    pointers.setdefault(found[0], []).append(parameter)
            if isinstance(func, ast.Attribute):
                name = func.attr
                if _in_place(name):
                    # `x.mul_(2)`: the receiver; `torch.relu_(x)`, `torch.Tensor.add_(x, 1)`: the first argument,
                    # where the receiver is a module's path (`out.copy_(x)`, `stats.update_(x)` do not write into x)
                    if _root(func.value, aliases) is not None:
                        wrote(func.value, node.lineno)
                    elif node.args and _module_path(func.value):
                        wrote(node.args[0], node.lineno)
                elif isinstance(func.value, ast.Attribute) and _in_place(func.value.attr) and node.args \
                        and _module_path(func.value):  # an overload: `torch.ops.aten.add_.Tensor(x, 1)`
                    wrote(node.args[0], node.lineno)
                elif name in _NUMPY_IN_PLACE and (found := _root(func.value, aliases)) is not None and found[1]:
                    writes.append((found[0], node.lineno))
                elif name == "copyto" and node.args:
                    wrote(node.args[0], node.lineno)
            for keyword in node.keywords:
                if keyword.arg == "inplace" and isinstance(keyword.value, ast.Constant) and keyword.value.value is True \
                        and node.args:  # F.relu(x, inplace=True)
                    wrote(node.args[0], node.lineno)
                if keyword.arg == "out":
                    outs = keyword.value.elts if isinstance(keyword.value, (ast.Tuple, ast.List)) else [keyword.value]
                    for out in outs:
                        wrote(out, node.lineno)
    return list(dict.fromkeys(writes))


_WRAPS_TRITON = frozenset(("wrap_triton", "capture_triton"))
# Triton calls that write through their first argument, a pointer
_TRITON_WRITES = frozenset(("store", "atomic_add", "atomic_and", "atomic_cas", "atomic_max", "atomic_min", "atomic_or",
                            "atomic_xchg", "atomic_xor"))


def _launched_kernels(node: ast.expr, kernels: dict[str, tuple[list[str], frozenset[str]]],
                      launchers: dict[str, list[str]]) -> list[str]:
    """The module's Triton kernels an expression launches when subscripted with a grid: `wrap_triton(k)`,
    `torch.library.wrap_triton(k)`, `k` itself, a name bound to one of those, either side of `a if c else b`."""
    if isinstance(node, ast.IfExp):
        return list(dict.fromkeys((*_launched_kernels(node.body, kernels, launchers),
                                   *_launched_kernels(node.orelse, kernels, launchers))))
    if isinstance(node, ast.Call) and node.args and (
            (isinstance(node.func, ast.Name) and node.func.id in _WRAPS_TRITON)
            or (isinstance(node.func, ast.Attribute) and node.func.attr in _WRAPS_TRITON)):
        node = node.args[0]
    if isinstance(node, ast.Name):
        if node.id in kernels:
            return [node.id]
        return launchers.get(node.id, [])
    return []


def _is_triton_jit(decorator: ast.expr) -> bool:
    """`@triton.jit`, `@jit`, `@triton.jit(...)`, `@triton.autotune(...)` (over a jit kernel)."""
    func = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name in ("jit", "autotune", "heuristics")


def triton_kernel_stores(tree: ast.Module) -> dict[str, tuple[list[str], frozenset[str]]]:
    """The module's `@triton.jit` kernels: name -> (parameters, those the kernel writes through): a parameter named in
    the pointer of a `tl.store(...)` (or `tl.atomic_*`), directly (`out_ptr + offs`) or through a local name bound to
    an expression of it (`ptrs = out_ptr + offs`; a value loaded, `tl.load(...)`, is no pointer). Bounded; a pointer
    passed on to another function (a `@triton.jit` helper) is not followed."""
    found: dict[str, tuple[list[str], frozenset[str]]] = {}
    for node in tree.body:
        if not (isinstance(node, ast.FunctionDef) and any(_is_triton_jit(d) for d in node.decorator_list)):
            continue
        args = node.args
        parameters = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
        refers: dict[str, set[str]] = {p: {p} for p in parameters}
        stored: set[str] = set()

        def named(expression: ast.expr) -> set[str]:
            names: set[str] = set()
            stack: list[ast.AST] = [expression]
            while stack and len(names) < 1000:
                part = stack.pop()
                if isinstance(part, ast.Call) and isinstance(part.func, ast.Attribute) and part.func.attr == "load":
                    continue  # (a value read, not a pointer)
                if isinstance(part, ast.Name):
                    names |= refers.get(part.id, set())
                stack.extend(ast.iter_child_nodes(part))
            return names

        for inner in _body_nodes(node):
            if isinstance(inner, ast.Assign) and len(inner.targets) == 1 and isinstance(inner.targets[0], ast.Name):
                refers[inner.targets[0].id] = named(inner.value)
            elif isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) \
                    and inner.func.attr in _TRITON_WRITES:
                pointer = inner.args[0] if inner.args else next(
                    (k.value for k in inner.keywords if k.arg in ("pointer", "ptr")), None)
                if pointer is not None:
                    stored |= named(pointer)
        # (`BLOCK: tl.constexpr` in `offs` is a size, not a pointer; an int named in the pointer, a stride, is kept:
        # a launch passes no argument tensor there)
        constants = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)
                     if a.annotation is not None and "constexpr" in unparsed(a.annotation)}
        found[node.name] = (parameters, frozenset(stored & set(parameters) - constants))
    return found


def unparsed(node: ast.expr) -> str:
    """The source of an expression; a stand-in where it is too deep to write back (`-` 600 times over: ast.unparse
    recurses once a level)."""
    try:
        return ast.unparse(node)
    except (RecursionError, MemoryError, ValueError):
        return "(an expression too deeply nested to show)"

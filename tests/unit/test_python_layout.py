"""The Python shell's layout (the C engine's is test_layout.py): each folder one role, every
import pointing down the layers, no import cycle, only the engine adapter importing the C
engine, and no module setting another module's globals.

Read from the source as it is (ast), so it checks the tree, not a description of it. Every
import counts: at module level or inside a function (a lazy import hides a circle, it does not
remove it), and so does a lookup of one of heatline's modules in sys.modules by name."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "heatline"

# From the bottom up: a module may import its own layer and the layers below it.
LAYERS = (
    # torch_watch imports nothing of heatline's: the session, below the integrations, uses it
    ("heatline._version", "heatline.options", "heatline.units",
     "heatline.integrations.torch_watch"),
    ("heatline.data",),  # the profile format
    ("heatline.engine",),  # the engine adapter
    ("heatline.api", "heatline.renderers", "heatline.serve"),
    ("heatline.run",),  # running a program
    ("heatline.cli",),  # the command line
    ("heatline.integrations",),  # ipython, pytest
    ("heatline", "heatline.__main__"),  # the public facade and `python -m heatline`
)
NATIVE = "heatline._native"


def _module_name(path):
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules():
    """name -> (path, ast) of every module of the package (the child hook included)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        found[_module_name(path)] = (path, ast.parse(path.read_text(encoding="utf-8")))
    return found


def _resolve(name, modules):
    """The module an imported name is: itself, or for `from pkg import x`, pkg.x when that
    is a module; None when it is not one of heatline's."""
    if name == NATIVE or name.startswith(NATIVE + "."):
        return NATIVE
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imports(tree, modules):
    """(imported module, line) for every import in ``tree``, wherever it is, and every
    sys.modules lookup of a heatline module by a literal name."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield _resolve(alias.name, modules), node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                target = _resolve(full, modules) if full in modules or full == NATIVE else None
                yield target or _resolve(node.module, modules), node.lineno
        elif isinstance(node, ast.Subscript) or isinstance(node, ast.Call):
            text = ast.unparse(node)
            if text.startswith(("sys.modules[", "sys.modules.get(")):
                argument = node.slice if isinstance(node, ast.Subscript) else node.args[0]
                if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                    yield _resolve(argument.value, modules), node.lineno


def _graph():
    modules = _modules()
    graph = {}
    for name, (_, tree) in modules.items():
        edges = graph.setdefault(name, {})
        for target, line in _imports(tree, modules):
            if target is not None and target != name:
                edges.setdefault(target, line)
    return modules, graph


def _layer(name):
    best = None
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if name == prefix or name.startswith(prefix + "."):
                if best is None or len(prefix) > best[1]:
                    best = (index, len(prefix))
    return None if best is None else best[0]


def test_every_module_has_a_layer():
    modules, _ = _graph()
    assert [name for name in modules if _layer(name) is None] == []


def test_every_import_points_down_the_layers():
    _, graph = _graph()
    upward = [
        f"{name} (layer {_layer(name)}) imports {target} (layer {_layer(target)}) at line {line}"
        for name, edges in graph.items()
        for target, line in edges.items()
        if target != NATIVE and _layer(target) > _layer(name)
    ]
    assert upward == []


def test_no_import_cycle_even_through_imports_inside_functions():
    _, graph = _graph()
    state, stack, cycles = {}, [], []

    def visit(name):
        state[name] = "open"
        stack.append(name)
        for target in graph.get(name, {}):
            if state.get(target) == "open":
                cycles.append(" -> ".join(stack[stack.index(target):] + [target]))
            elif target not in state:
                visit(target)
        stack.pop()
        state[name] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name)
    assert cycles == []


def test_only_the_engine_adapter_imports_the_c_engine():
    _, graph = _graph()
    importers = sorted(name for name, edges in graph.items() if NATIVE in edges)
    assert importers and all(name.startswith("heatline.engine.") for name in importers), importers


def test_the_data_package_imports_nothing_above_it():
    _, graph = _graph()
    allowed = ("heatline.data", "heatline.options", "heatline.units", "heatline._version")
    above = [f"{name} imports {target}" for name, edges in graph.items()
             if name.startswith("heatline.data") for target in edges
             if not any(target == a or target.startswith(a + ".") for a in allowed)]
    assert above == []


def _module_aliases(tree, modules):
    """Names bound to one of heatline's modules by this module's imports."""
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and _resolve(alias.name, modules) == alias.name:
                    aliases[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full in modules:
                    aliases[alias.asname or alias.name] = full
    return aliases


def test_no_module_sets_another_modules_globals():
    modules, _ = _graph()
    found = []
    for name, (path, tree) in modules.items():
        aliases = _module_aliases(tree, modules)
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            elif isinstance(node, ast.Delete):
                targets = node.targets
            for target in targets:
                for part in ast.walk(target):
                    if (isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name)
                            and part.value.id in aliases and aliases[part.value.id] != name):
                        found.append(f"{path.name}:{node.lineno} sets "
                                     f"{aliases[part.value.id]}.{part.attr}")
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("setattr", "delattr") and node.args
                    and isinstance(node.args[0], ast.Name) and node.args[0].id in aliases):
                found.append(f"{path.name}:{node.lineno} {node.func.id} on {node.args[0].id}")
    assert found == []


def test_the_checks_see_what_they_claim_to():
    """The graph holds imports inside functions and sys.modules lookups (else the tests above
    would pass on a tree that breaks them)."""
    _, graph = _graph()
    assert "heatline.api" in graph["heatline"]  # heatline.__getattr__ imports it lazily
    assert "heatline.engine.session" in graph["heatline.api"]  # a sys.modules lookup too
    assert NATIVE in graph["heatline.engine.session"]  # imported inside methods


def test_every_folder_says_its_role():
    for folder in sorted(p for p in PACKAGE.rglob("*") if p.is_dir() and p.name != "__pycache__"):
        if folder.name in ("_native", "_child"):
            continue  # the C engine's files say theirs (test_layout.py); _child is a hook dir
        init = folder / "__init__.py"
        assert init.exists(), f"{folder} has no __init__.py saying its role"
        assert ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))), init

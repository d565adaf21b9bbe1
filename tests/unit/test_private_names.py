"""No module of heatline's Python shell reaches into another's private names: what one module
uses of another is that module's public interface, so a private name can change with its own
module alone.

A private name starts with one underscore (``_start``); a dunder (``__version__``) is public.
Checked in the source as it is (ast), at module level and inside functions alike:

- ``from heatline.x import _y`` (or a relative ``from . import _y``) where ``_y`` is a name
  of heatline.x, not a module of its own: a private submodule (``heatline._native``,
  ``heatline.run._child``) is a module, imported as a whole, and is allowed;
- ``x._y`` where ``x`` names one of heatline's modules in that scope (bound by an import),
  and ``getattr(x, "_y")``; again a private submodule is allowed.

The C binding (heatline._native) is the one exception: its underscored functions are the
engine adapter's own seam with the C engine, reached from heatline.engine only (the binding is
imported nowhere else: test_python_layout.py)."""

import ast

import pytest

from test_python_layout import PACKAGE, _module_name

# Nothing checked here depends on the CPython version (Makefile, suite-3.X).
pytestmark = pytest.mark.interpreter_independent

# Compiled modules of the package (no .py file): the engine and the attach agent.
EXTENSIONS = ("heatline._native", "heatline._agent")
# The C binding's private functions may be called from these packages only.
BINDING_USERS = ("heatline.engine",)
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _sources():
    """name -> (source text, is a package) of every Python module of heatline."""
    return {_module_name(path): (path.read_text(encoding="utf-8"), path.name == "__init__.py")
            for path in sorted(PACKAGE.rglob("*.py"))}


def _is_private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _is_module(name, modules):
    return name in modules or name in EXTENSIONS


def _absolute(node, here, is_package):
    """The module a ``from ... import`` names, relative imports resolved against ``here``."""
    if node.level == 0:
        return node.module
    parts = here.split(".")
    base = parts if is_package else parts[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _in_scope(scope):
    """The nodes of a scope's own body, without those of the functions nested in it (yielded
    as nodes themselves, so that the caller can go into them with the scope's names)."""
    children = list(ast.iter_child_nodes(scope))
    while children:
        node = children.pop()
        yield node
        if not isinstance(node, SCOPES):
            children.extend(ast.iter_child_nodes(node))


def _bindings(scope, here, is_package, modules):
    """(names bound to heatline modules by this scope's imports, names the scope binds to
    something else: its parameters and assignments, which hide an outer import)."""
    imported, other = {}, set()
    if isinstance(scope, SCOPES):
        arguments = scope.args
        for argument in (arguments.posonlyargs + arguments.args + arguments.kwonlyargs
                         + [a for a in (arguments.vararg, arguments.kwarg) if a]):
            other.add(argument.arg)
    for node in _in_scope(scope):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and _is_module(alias.name, modules):
                    imported[alias.asname] = alias.name
                elif not alias.asname and alias.name.split(".")[0] == "heatline":
                    imported["heatline"] = "heatline"
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node, here, is_package)
            for alias in node.names:
                if _is_module(f"{source}.{alias.name}", modules):
                    imported[alias.asname or alias.name] = f"{source}.{alias.name}"
                else:
                    other.add(alias.asname or alias.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            other.add(node.id)
    return imported, other - set(imported)


def _module_of(node, names, modules):
    """The heatline module an expression names in scope (``x``, ``heatline.x.y``), or None."""
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.Attribute):
        outer = _module_of(node.value, names, modules)
        if outer is not None and _is_module(f"{outer}.{node.attr}", modules):
            return f"{outer}.{node.attr}"
    return None


def _allowed(user, target, name, modules):
    if _is_module(f"{target}.{name}", modules):
        return True  # a private submodule, used as a whole
    if target == "heatline._native":
        return any(user == p or user.startswith(p + ".") for p in BINDING_USERS)
    return target == user


def _violations_in(name, tree, is_package, modules):
    found = []

    def check(scope, outer):
        imported, other = _bindings(scope, name, is_package, modules)
        names = {k: v for k, v in outer.items() if k not in other}
        names.update(imported)
        for node in _in_scope(scope):
            if isinstance(node, SCOPES):
                check(node, names)
            elif isinstance(node, ast.ImportFrom):
                source = _absolute(node, name, is_package)
                if source != "heatline" and not source.startswith("heatline."):
                    continue
                for alias in node.names:
                    if _is_private(alias.name) and not _allowed(name, source, alias.name,
                                                                modules):
                        found.append(f"{name}:{node.lineno} imports {source}.{alias.name}")
            elif isinstance(node, ast.Attribute) and _is_private(node.attr):
                target = _module_of(node.value, names, modules)
                if target is not None and not _allowed(name, target, node.attr, modules):
                    found.append(f"{name}:{node.lineno} uses {target}.{node.attr}")
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                  and node.func.id in ("getattr", "hasattr", "setattr") and len(node.args) >= 2
                  and isinstance(node.args[1], ast.Constant)
                  and isinstance(node.args[1].value, str) and _is_private(node.args[1].value)):
                target = _module_of(node.args[0], names, modules)
                if target is not None and not _allowed(name, target, node.args[1].value,
                                                       modules):
                    found.append(f"{name}:{node.lineno} uses {target}.{node.args[1].value}")

    check(tree, {})
    return found


def _violations(sources, modules=None):
    """Every private use across modules in ``sources`` (name -> (source text, is a package));
    ``modules``: the names that are modules (default: those of ``sources``)."""
    names = set(modules if modules is not None else sources)
    found = []
    for name, (text, is_package) in sorted(sources.items()):
        found += _violations_in(name, ast.parse(text), is_package, names)
    return found


def test_no_module_uses_another_modules_private_names():
    sources = _sources()
    assert {"heatline.api", "heatline.run.follow", "heatline.engine.control"} <= set(sources)
    assert _violations(sources) == []


def test_the_check_sees_each_kind_of_private_use():
    """Each way of reaching a private name is found, and the allowed uses are not (else the
    test above could pass on a tree that breaks the rule)."""
    known = {"heatline", "heatline.api", "heatline.run", "heatline.run.follow",
             "heatline.run._child", "heatline.engine", "heatline.engine.control",
             "heatline.engine.session", "heatline.integrations"}
    bad = {
        "heatline.run.one": ("from heatline.run.follow import _label\n", False),
        "heatline.run.two": ("def f():\n    from heatline import api\n    api._start()\n", False),
        "heatline.run.three": ("import heatline.engine.control\n"
                               "heatline.engine.control._temp_dir()\n", False),
        "heatline.run.four": ("from heatline.engine import control as c\n"
                              "getattr(c, '_temp_dir')()\n", False),
        "heatline.run.five": ("from . import follow\nfollow._label()\n", False),
        "heatline.integrations.six": ("from heatline._native import _environ\n", False),
        "heatline.integrations.seven": ("from heatline import _native\n_native._environ()\n",
                                        False),
    }
    found = _violations(bad, known | set(bad))
    assert [line.split(":")[0] for line in found] == sorted(bad)
    assert "heatline.run.two:3 uses heatline.api._start" in found
    assert "heatline.run.five:2 uses heatline.run.follow._label" in found

    good = {
        # a private submodule; the C binding from the engine adapter; dunders; a module's own
        "heatline.run.a": ("from heatline.run import _child\nimport heatline.run._child\n",
                           False),
        "heatline.engine.b": ("from heatline import _native\n_native._environ()\n", False),
        "heatline.run.c": ("from heatline import __version__\nimport heatline\n"
                           "heatline.__file__\n", False),
        "heatline.run.d": ("_x = 1\ndef _y():\n    return _x\n", False),
        # a parameter or a local of the same name is not the module
        "heatline.run.e": ("from heatline.run import follow\n"
                           "def f(follow):\n    return follow._label\n"
                           "def g():\n    follow = object()\n    return follow._label\n",
                           False),
        # an object's private attribute, got from a module's public name
        "heatline.run.f": ("from heatline.engine import session\n"
                           "session.Session()._state\n", False),
    }
    assert _violations(good, known | set(good)) == []

"""heatline's start-up hook in a Python child (heatline/run/carrier.py). This directory is put
first on PYTHONPATH only in the environment of an exec that heatline follows, so the child's
interpreter imports this module while it starts (site.py). It leaves the child as it would be
without heatline: os.environ and PYTHONPATH as the parent passed them, this directory out of
sys.path, the real sitecustomize (if any) run, the modules imported here taken out of
sys.modules; then starts profiling with the parent's settings.

Written for any Python, 2.7 included (no annotations, no f-strings): an interpreter heatline
does not profile that gets here all the same (carrier.followable told its version wrong) has
its environment and sys.path put back and its own sitecustomize run, and nothing else."""

# carrier.SUPPORTED_VERSIONS (this module cannot import heatline before it knows the version).
_SUPPORTED = ((3, 9), (3, 15))


def _profile(config, before):
    import sys

    root = config.get("root", "")
    added = root not in sys.path
    if added:
        sys.path.insert(0, root)
    # heatline's modules compiled by the parent where they have no bytecode of their own
    # (carrier.bytecode_for_children): found there while heatline is imported, not after.
    prefix = getattr(sys, "pycache_prefix", None)
    if prefix is None and config.get("pycache"):
        sys.pycache_prefix = config["pycache"]
    try:
        if config.get("role") == "main":  # the run's main process exec'd this program
            from heatline.run import handover

            handover.continue_run(config)
        else:
            from heatline.run import follow

            follow.start_spawned(config)
    except Exception:  # noqa: BLE001 -- the child runs unprofiled rather than not at all
        pass
    finally:
        if prefix is None:
            sys.pycache_prefix = None
        if added and root in sys.path:
            sys.path.remove(root)
        keep = set(sys.builtin_module_names) | {"sitecustomize"}
        for name in list(sys.modules):
            if name in before or name in keep or name == "heatline" or name.startswith(
                "heatline."
            ):
                continue
            if name in ("_posixsubprocess",):  # wrapped: the program must use this copy
                continue
            del sys.modules[name]


def _config(text):
    """The run's settings from HEATLINE_CHILD (carrier.encode_config), or None."""
    import sys

    if text is None or not _SUPPORTED[0] <= tuple(sys.version_info[:2]) <= _SUPPORTED[1]:
        return None
    import marshal  # built in, as everything imported here: no json (re, enum...)

    try:
        config = marshal.loads(bytes.fromhex(text))
    except (ValueError, EOFError, TypeError):
        return None
    if not isinstance(config, dict):
        return None
    # A command's processes (run/command.py) get the variables whatever their interpreter:
    # only a CPython of a version heatline's engine is built for, with the GIL, is profiled.
    engines = config.get("engines")
    if engines is not None and (
        tuple(sys.version_info[:2]) not in [tuple(version) for version in engines]
        or getattr(sys, "implementation", None) is None
        or sys.implementation.name != "cpython"
        or "t" in getattr(sys, "abiflags", "")
    ):
        return None
    return config


def _restore_pythonpath(hook_dir):
    """PYTHONPATH as the parent passed it: carrier.Carrier.variables put this directory first,
    alone when the parent passed none, alone with a trailing separator when it passed an empty
    one."""
    import os

    value = os.environ.get("PYTHONPATH")
    if value is None:
        return
    first, separator, rest = value.partition(os.pathsep)
    if not first or os.path.abspath(first) != hook_dir:
        return
    if separator:
        os.environ["PYTHONPATH"] = rest
    elif first.endswith(os.sep):
        os.environ["PYTHONPATH"] = ""
    else:
        del os.environ["PYTHONPATH"]


def _is_absent(exc):
    """Whether an ImportError of `import sitecustomize` says there is none (2.7's has no
    name)."""
    if hasattr(exc, "name"):
        return exc.name == "sitecustomize"
    return str(exc) == "No module named sitecustomize"


def _start():
    import os
    import sys

    hook_dir = os.path.dirname(os.path.abspath(__file__))
    config = _config(os.environ.pop("HEATLINE_CHILD", None))
    before = set(sys.modules)
    _restore_pythonpath(hook_dir)
    for index, entry in enumerate(sys.path):
        if entry and os.path.abspath(entry) == hook_dir:
            del sys.path[index]
            break
    # The import system expects this name in sys.modules when this module ends: the real
    # sitecustomize if there is one, else this (empty) module.
    own = sys.modules.pop("sitecustomize")
    try:
        try:
            import sitecustomize  # noqa: F401 -- the real one, as site.py would run it
        except ImportError as exc:
            sys.modules["sitecustomize"] = own
            if not _is_absent(exc):
                raise
        except BaseException:
            sys.modules["sitecustomize"] = own
            raise
    finally:
        if config is not None:
            _profile(config, before)


_start()

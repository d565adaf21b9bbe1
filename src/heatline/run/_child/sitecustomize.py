"""heatline's start-up hook in a Python child (heatline/run/carrier.py). This directory is put
first on PYTHONPATH only in the environment of an exec that heatline follows, so the child's
interpreter imports this module while it starts (site.py). It leaves the child as it would be
without heatline: os.environ and PYTHONPATH as the parent passed them, this directory out of
sys.path, the real sitecustomize (if any) run, the modules imported here taken out of
sys.modules; then starts profiling with the parent's settings."""


def _profile(config: dict, before: set) -> None:
    import sys

    root = config.get("root", "")
    added = root not in sys.path
    if added:
        sys.path.insert(0, root)
    try:
        from heatline.run import follow

        follow.start_spawned(config)
    except Exception:  # noqa: BLE001 -- the child runs unprofiled rather than not at all
        pass
    finally:
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


def _start() -> None:
    import os
    import sys

    hook_dir = os.path.dirname(os.path.abspath(__file__))
    config_text = os.environ.pop("HEATLINE_CHILD", None)
    before = set(sys.modules)
    config = None
    if config_text is not None:
        import marshal  # built in, as everything imported here: no json (re, enum...)

        try:
            config = marshal.loads(bytes.fromhex(config_text))  # carrier.encode_config
        except (ValueError, EOFError, TypeError):
            config = None
        if not isinstance(config, dict):
            config = None
    if config is not None and config.get("pythonpath") is not None:
        os.environ["PYTHONPATH"] = config["pythonpath"]
    else:
        os.environ.pop("PYTHONPATH", None)
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
            if exc.name != "sitecustomize":
                raise
        except BaseException:
            sys.modules["sitecustomize"] = own
            raise
    finally:
        if config is not None:
            _profile(config, before)


_start()

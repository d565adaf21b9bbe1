"""The profile: the one place that owns heatline's profile format (docs/profile-format.md) end
to end. snapshot.py reads the engine snapshot's vocabulary (the profile's own field names, _ns
for _s), build.py turns a snapshot into a profile, memory.py its memory fields, their key lists
and the leak rule, gpu.py its GPU fields, merge.py one profile from several processes', io.py
reads, validates and writes profile files. Nothing here imports the engine.

Imported once the program is done (or by `heatline view`), never while it runs, unless the
program itself uses ``heatline.profile`` (the API's context manager and decorator, below)."""

import sys

from heatline.profile.io import (
    MAX_PROFILE_BYTES,
    READABLE_VERSIONS,
    REQUIRED_FILE_KEYS,
    REQUIRED_KEYS,
    SCHEMA_VERSION,
    ProfileError,
    dump,
    load,
    replace_file,
    validate,
    write_bytes,
)

__all__ = [
    "MAX_PROFILE_BYTES",
    "READABLE_VERSIONS",
    "REQUIRED_FILE_KEYS",
    "REQUIRED_KEYS",
    "SCHEMA_VERSION",
    "ProfileError",
    "dump",
    "load",
    "replace_file",
    "validate",
    "write_bytes",
]


class _CallableModule(type(sys)):  # type: ignore[misc]
    """``heatline.profile`` is this package and also the profiling API's context manager and
    decorator (``with heatline.profile() as p:``, ``@heatline.profile``): calling the module
    calls heatline.api.profile. (Importing a submodule sets the package's attribute to the
    module, so a function of that name in heatline/__init__.py could not stay there.)"""

    def __call__(self, *args, **kwargs):  # noqa: ANN002, ANN003
        from heatline.api import profile

        return profile(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

"""The profile data: the one place that owns heatline's profile format (docs/profile-format.md) end
to end. snapshot.py reads the engine snapshot's vocabulary (the profile's own field names, _ns
for _s), build.py turns a snapshot into a profile, memory.py its memory fields, their key lists
and the leak rule, gpu.py its GPU fields, merge.py one profile from several processes', io.py
reads, validates and writes profile files, model.py the profile's shape as types (for type
checkers and the tests; nothing imports it at run time). Nothing here imports the engine.

Imported once the program is done (or by `heatline view`), never while it runs."""

from heatline.data.io import (
    MAX_PROFILE_BYTES,
    READABLE_VERSIONS,
    REQUIRED_FILE_KEYS,
    REQUIRED_KEYS,
    SCHEMA_VERSION,
    ProfileError,
    dump,
    encode,
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
    "encode",
    "load",
    "replace_file",
    "validate",
    "write_bytes",
]

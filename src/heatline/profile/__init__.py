"""The profile: the one place that owns heatline's profile format (docs/profile-format.md) end
to end. build.py turns an engine snapshot into a profile, memory.py its memory fields and the
leak rule, io.py reads, validates and writes profile files. Nothing here imports the engine.

Imported once the program is done (or by `heatline view`), never while it runs."""

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

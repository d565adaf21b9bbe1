"""A finished profile changed for where it is shown: some threads left out, source files given
the names their owner knows them by. Used by the IPython magics (a kernel's own threads are not
the cell's; a cell file is "Cell In[3]", not /tmp/ipykernel_PID/HASH.py); the result is still
a valid profile (docs/profile-format.md)."""

from __future__ import annotations

from typing import Any, Collection, Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the model imports typing
    from heatline.data.model import Profile

_TIME_KEYS = ("python_s", "native_s", "system_s", "cpu_wait_s")


def without_threads(profile: Profile, left_out: Collection[int]) -> Profile:
    """``profile`` (in place) without the threads whose ``native_id`` is in ``left_out`` and
    whose time was all outside user code: their rows of ``threads``, their stacks (the flame
    graph's), and their time from ``totals.unattributed_s``. A thread that charged time to a
    user line is kept, so the lines and the threads still add up to the same total."""
    threads = profile.get("threads", [])
    dropped = {index for index, thread in enumerate(threads)
               if thread.get("native_id") in left_out
               and not any(thread.get(key, 0.0) for key in _TIME_KEYS)}
    if not dropped:
        return profile
    new_index: dict[int, int] = {}
    kept = []
    for index, thread in enumerate(threads):
        if index not in dropped:
            new_index[index] = len(kept)
            kept.append(thread)
    unattributed = sum(threads[index].get("unattributed_s", 0.0) for index in dropped)
    profile["threads"] = kept
    totals = profile["totals"]
    totals["unattributed_s"] = round(max(0.0, totals["unattributed_s"] - unattributed), 6)
    stacks = profile.get("stacks")
    if stacks:
        stacks["entries"] = [{**entry, "thread": new_index[entry["thread"]]}
                             for entry in stacks["entries"] if entry["thread"] in new_index]
    return profile


def renamed_files(profile: Profile, names: Mapping[str, str]) -> Profile:
    """``profile`` (in place) with each source path in ``names`` replaced by its name there,
    wherever the profile names a file: the keys of ``files`` (a child process's too) and every
    ``file`` field (stack frames, peaks, combined peak lines, GPU kernels, the summary's
    places)."""
    if not names:
        return profile

    def rename(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: (names.get(item, item) if key == "file" and isinstance(item, str)
                          else {names.get(path, path): rename(entry)
                                for path, entry in item.items()}
                          if key == "files" and isinstance(item, dict)
                          else rename(item))
                    for key, item in value.items()}
        if isinstance(value, list):
            return [rename(item) for item in value]
        return value

    renamed = rename(profile)
    profile.clear()
    profile.update(renamed)
    return profile

"""``--use-virtual-time`` (Scalene's name): count only the time threads spent running, not
the time they were blocked.

Applied to the finished profile before it is written or shown: every ``system_s`` (blocked
time: sleep, I/O, locks, waiting for the GIL) and every ``cpu_wait_s`` (runnable, waiting for
a CPU) becomes 0, and every percentage is recomputed over what is left (``python_s +
native_s``), so the shares are shares of running time. Where the kernel does not measure
run-queue waits (the profile warns), a thread waiting for a CPU counts as running, except one
still waking from a wait (blocked at its previous sample, not run since: the sampler charges
that as blocked, so a sleep's wake-up on a busy machine is left out with the sleep).
"""

from __future__ import annotations

from typing import Any

from heatline.data.summary import with_summary

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the model imports typing
    from heatline.data.model import Profile

_KINDS = ("python", "native", "system", "cpu_wait")


def running_time_only(profile: Profile) -> Profile:
    """``profile`` with blocked time removed, in place; returns it."""
    totals = profile["totals"]
    totals["system_s"] = 0.0
    totals["cpu_wait_s"] = 0.0
    totals["attributed_s"] = round(totals["python_s"] + totals["native_s"], 6)
    whole = totals["attributed_s"]
    for thread in profile.get("threads", []):
        thread["system_s"] = 0.0
        thread["cpu_wait_s"] = 0.0
    for entry in profile.get("files", {}).values():
        for item in [entry, *entry.get("lines", []), *entry.get("functions", [])]:
            item["system_s"] = 0.0
            item["cpu_wait_s"] = 0.0
            for kind in _KINDS:
                item[f"{kind}_pct"] = round(100.0 * item[f"{kind}_s"] / whole, 3) if whole else 0.0
    # Files and functions are listed most time first: re-sort by what is left.
    def running(item: dict[str, Any]) -> float:
        return -(item["python_s"] + item["native_s"])

    profile["files"] = dict(sorted(profile.get("files", {}).items(), key=lambda p: running(p[1])))
    for entry in profile["files"].values():
        entry.get("functions", []).sort(key=running)
    table = profile.get("stacks") or {}
    entries = []
    for stack in table.get("entries", []):
        stack["system_s"] = 0.0
        stack["cpu_wait_s"] = 0.0
        if stack["python_s"] or stack["native_s"]:
            entries.append(stack)
    if table:
        table["entries"] = entries
    profile.setdefault("warnings", []).append(
        "--use-virtual-time: blocked (system) time and waits for a CPU are left out; shares "
        "are of running time"
    )
    # The summary of what is left: without blocked time, no rule about waiting fires.
    return with_summary(profile)

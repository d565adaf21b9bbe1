"""The GPU section of the terminal report: devices, the lines that launched GPU work, and the
most expensive kernels with the lines that launched them. Drawn from the profile's ``gpu``
object and per-line GPU fields (docs/profile-format.md); nothing is shown when GPU profiling
was off."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from heatline.renderers.visible import visible

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the model imports typing
    from heatline.data.model import GpuDevice, Kernel, Profile

MAX_LINE_ROWS = 15
MAX_KERNEL_ROWS = 10
MAX_LAUNCHERS = 3  # launching lines named per kernel


def render(console: Console, profile: Profile, short_path: Callable[[str], str]) -> None:
    """Print the GPU section to ``console`` (no output when GPU profiling was off)."""
    gpu = profile.get("gpu") or {}
    if not gpu.get("enabled"):
        return
    console.print()
    console.print(Text("GPU", "bold"))
    for device in gpu["devices"]:
        console.print(_device_line(device), style="dim")
    if not gpu["kernel_tracing"]:
        console.print(
            "No per-line GPU time: kernel tracing (CUPTI) was off; see the warnings.", style="dim"
        )
        return
    lines = _gpu_lines(profile)
    if lines:
        console.print()
        console.print(_line_table(lines, short_path), no_wrap=True, overflow="ellipsis")
    if gpu["kernels"]:
        console.print()
        console.print(_kernel_table(gpu["kernels"], short_path), overflow="ellipsis")
    total = gpu["gpu_s"]
    summary = f"GPU time {total:.3f} s in {gpu['launches']} launches"
    if gpu["unattributed_gpu_s"]:
        summary += f" ({gpu['unattributed_gpu_s']:.3f} s not traced to a user line)"
    if gpu["alloc_peak_bytes"]:
        summary += f"; device allocations peaked at {_mb(gpu['alloc_peak_bytes'])} MiB"
        at = gpu.get("alloc_peak_at")
        if at:
            summary += f" ({short_path(at['file'])}:{at['line']})"
    console.print()
    console.print(summary, style="dim")


def _mb(value: float) -> str:
    """Mebibytes, as every size heatline prints."""
    return f"{value / (1 << 20):.1f}"


def _ms(seconds: float) -> str:
    """Milliseconds, with three significant digits for short times."""
    ms = seconds * 1000
    return f"{ms:.3g}" if ms < 100 else f"{ms:.0f}"


def _device_line(device: GpuDevice) -> str:
    return (
        f"GPU {device['index']} ({visible(device['name'])}): "
        f"utilisation {device['utilisation_pct']:.0f}% "
        f"on average, idle in {device['idle_share'] * 100:.0f}% of samples; memory peak "
        f"{_mb(device['peak_memory_used_bytes'])} MiB of {_mb(device['memory_total_bytes'])} MiB "
        "(device-wide, all processes)"
    )


def _gpu_lines(profile: Profile) -> list[tuple[str, dict[str, Any]]]:
    rows = [
        (path, line)
        for path, entry in profile["files"].items()
        for line in entry["lines"]
        if line.get("gpu_launches") or line.get("gpu_alloc_bytes")
    ]
    rows.sort(
        key=lambda row: (-row[1]["gpu_s"], -row[1]["gpu_alloc_bytes"], row[0], row[1]["line"])
    )
    return rows[:MAX_LINE_ROWS]


def _new_table(title: str) -> Table:
    return Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        header_style="bold",
        title=title,
        title_justify="left",
        title_style="bold",
    )


def _line_table(rows: list[tuple[str, dict[str, Any]]], short_path: Callable[[str], str]) -> Table:
    table = _new_table("GPU work by launching line")
    table.add_column("Line", no_wrap=True)
    for header in ("GPU ms", "launches", "H→D MiB", "D→H MiB", "alloc MiB"):
        table.add_column(header, justify="right", no_wrap=True, min_width=len(header))
    table.add_column("Source", overflow="ellipsis", no_wrap=True)
    for path, line in rows:
        table.add_row(
            Text(f"{short_path(path)}:{line['line']}", "bold"),
            _ms(line["gpu_s"]),
            str(line["gpu_launches"]),
            _mb(line["gpu_copy_h2d_bytes"]) if line["gpu_copy_h2d_bytes"] else "",
            _mb(line["gpu_copy_d2h_bytes"]) if line["gpu_copy_d2h_bytes"] else "",
            _mb(line["gpu_alloc_bytes"]) if line["gpu_alloc_bytes"] else "",
            Text(visible(line["source"].strip())),
        )
    return table


def _kernel_table(kernels: list[Kernel], short_path: Callable[[str], str]) -> Table:
    table = _new_table("Top kernels")
    table.add_column("Kernel", overflow="fold", ratio=2)
    for header in ("calls", "GPU ms"):
        table.add_column(header, justify="right", no_wrap=True, min_width=len(header))
    table.add_column("Launched from", overflow="fold", ratio=1)
    for kernel in kernels[:MAX_KERNEL_ROWS]:
        launchers = [
            f"{short_path(item['file'])}:{item['line']}" if item["file"] else "(no user line)"
            for item in kernel["lines"][:MAX_LAUNCHERS]
        ]
        more = len(kernel["lines"]) - MAX_LAUNCHERS + (1 if kernel["other_lines_calls"] else 0)
        if more > 0:
            launchers.append(f"+{more} more")
        table.add_row(
            Text(visible(kernel["name"])),
            str(kernel["calls"]),
            _ms(kernel["gpu_s"]),
            ", ".join(launchers),
        )
    return table

"""The end of a run with child processes: every child's profile read from the run directory
and merged with the main one (data/merge.py); the run directory removed. Children still
running are not waited for."""

from __future__ import annotations

import os

from heatline.run import carrier as carriers
from heatline.run.output import one_line

# typing only for type checkers: a run's path imports none (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def collect(main_profile: dict[str, Any], main_epoch: float | None = None,
            main_exit: str = "exit", root: dict[str, Any] | None = None) -> dict[str, Any]:
    """The main profile merged with every child's (data/merge.py); the run directory is
    removed. Children still running are not waited for. The parts of the main process that
    ran before an exec handed the run over (handover.py) are merged into the main profile
    first, as one process. main_epoch: the wall-clock time of time 0 of the main profile's
    timelines (Session.start_epoch, known exactly once its snapshot is taken); children's
    start_s are measured from it (from the run's first session's, when an exec handed the run
    over: the merged main profile's time 0 is that session's). main_exit: how the main
    process ends, as a process's ``exit`` (docs/profile-format.md).

    ``root``: the command heatline ran (run/command.py), the processes table's first row in
    place of this process (pid, ppid, role, argv; program, the profile's label), listed even
    with no child; ``main_profile`` then holds no work of its own. Where the command itself
    was a profiled Python process (``heatline -- python x.py``, a shell's exec of python),
    that process's profile, its parts merged, is the root's."""
    carrier = carriers.current()
    if carrier is None or carrier.config["dir"] is None:
        return main_profile
    from heatline.data.merge import merge_processes, merge_segments

    directory = carrier.config["dir"]
    found, started, finished, problems = _read_children(directory, _sources(main_profile))
    children = []
    segments = []  # this process's, before its execs
    command_parts = []  # the command's own, when it was a profiled Python process
    for token, info, profile, segment in found:
        if segment and info["pid"] == os.getpid():
            if token != carrier.written_segment:  # else the session's own
                segments.append((info, profile))
        elif root is not None and info["pid"] == root["pid"]:
            command_parts.append((info, profile))
        else:
            children.append((info, profile))
    _remove_dir(directory)
    origin = carrier.config["start_epoch"] if segments or main_epoch is None else main_epoch
    for info, _ in segments + children + command_parts:
        info["offset_s"] = info.pop("start_epoch") - origin
    if segments:
        epoch = carrier.main_epoch if main_epoch is None else main_epoch
        this = {"pid": os.getpid(), "role": "main", "offset_s": epoch - origin}
        segments.sort(key=lambda segment: segment[0]["offset_s"])
        main_profile = merge_segments([*segments, (this, main_profile)])
    if command_parts:
        command_parts.sort(key=lambda part: part[0]["offset_s"])
        base = command_parts[0][0]["offset_s"]
        if any(info["offset_s"] < base for info, _ in children):
            # The command started others before it exec'd Python (bash -c 'a; python b'):
            # its profile is heatline's empty one, then the Python parts after the exec.
            first = {"pid": root["pid"], "role": root["role"], "offset_s": 0.0}
            main_profile = merge_segments([(first, main_profile), *command_parts])
        else:
            # Python from the start (heatline -- python x.py): time 0 is its own.
            main_profile = (command_parts[0][1] if len(command_parts) == 1
                            else merge_segments(command_parts))
            for info, _ in children:
                info["offset_s"] -= base
    missing = len(started - finished)
    if not children and not missing and root is None:
        return main_profile
    if root is None:
        main_info = {"pid": os.getpid(), "ppid": os.getppid(), "role": "main",
                     "argv": list(main_profile["argv"]), "exit": main_exit, "offset_s": 0.0}
    else:
        main_info = {"pid": root["pid"], "ppid": root["ppid"], "role": root["role"],
                     "argv": list(root["argv"]), "exit": main_exit, "offset_s": 0.0}
        main_profile = dict(main_profile, program=root["program"], argv=list(root["argv"]))
    merged = merge_processes((main_info, main_profile), children, missing=missing,
                             missing_detail=_missing_detail(started - finished))
    merged["warnings"] += sorted(problems)
    return merged


def _sources(main_profile: dict[str, Any]) -> list[str]:
    """Where the code a child ran from cloudpickle's payloads may come from (its functions of
    ``__main__`` first): the main script, then the main process's other files."""
    program = main_profile.get("program", "")
    return [*([program] if os.path.isabs(program) else []),
            *(path for path in main_profile.get("files", {}) if path != program)]


def _read_children(directory: str, sources: list[str] | None = None,
                   ) -> tuple[list[Any], set[str], set[str], list[str]]:
    """What the children wrote into ``directory``: (token, info, profile, segment) for each
    profile read (info has pid, ppid, role, argv, exit and start_epoch; segment: a part of the
    main process written at its exec), the tokens of the children that started, of those that
    wrote a profile, and one line for each profile that could not be written or read.
    ``sources``: where code cloudpickle rebuilt may come from (build.py,
    charge_dynamic_code)."""
    import marshal

    from heatline.data.build import build_profile, host_name

    try:
        names = os.listdir(directory)
    except OSError:
        names = []
    found = []
    started = {name[: -len(".started")] for name in names if name.endswith(".started")}
    finished = set()
    problems = []  # one line per child that tried to write its profile and failed
    for name in names:
        if name.endswith(".failed"):
            problems.append(f"child process {name.split('-')[0]} could not write its profile: "
                            + _read_line(os.path.join(directory, name)))
        if not name.endswith(".prof"):
            continue
        try:
            with open(os.path.join(directory, name), "rb") as f:
                payload = marshal.load(f)
                status = f.read(16)  # what the engine appended at the child's exit, if any
            profile = build_profile(
                payload["snapshot"],
                program=payload["program"],
                argv=payload["argv"],
                started_at=payload["started_at"],
                elapsed_s=payload["elapsed_s"],
                cpu_s=payload["cpu_s"],
                sampling_interval_s=payload["sampling_interval_s"],
                fork_stack=payload.get("fork_stack") or None,
                dynamic_sources=sources or (),
                host=host_name(),  # a child runs on its parent's machine
                pid=payload["pid"],
                start_epoch=payload["start_epoch"],
            )
        except Exception as exc:  # noqa: BLE001 -- a torn or foreign file costs only that child
            problems.append(f"the profile of child process {name.split('-')[0]} could not be "
                            f"read: {one_line(exc)[:300]}")
            continue
        token = name[: -len(".prof")]
        finished.add(token)
        info = {key: payload[key] for key in ("pid", "ppid", "role", "argv", "exit")}
        if info["exit"] == "exit":  # it left through exit(): with which status, if it is known
            info["exit"] = _exit_status(status)
        info["start_epoch"] = payload["start_epoch"]  # made an offset once the origin is known
        found.append((token, info, profile, bool(payload.get("segment"))))
    return found, started, finished, problems


def merge_attached(main_profile: dict[str, Any], directory: str, main_info: dict[str, Any],
                   main_epoch: float) -> dict[str, Any]:
    """heatline attach, in the attacher: the attached process's profile merged with the
    profiles its children wrote into ``directory`` while attached (run/follow.py's
    follow_attached), as a run's end merges them (collect); a child that started but had not
    written its profile by now (still running at the detach, or killed) is counted as a run
    counts one still running at its end. main_info: pid, ppid, role, argv, exit of the
    attached process; main_epoch: the time 0 of its profile's timelines. The directory is
    the attacher's to remove."""
    from heatline.data.merge import merge_processes

    found, started, finished, problems = _read_children(directory, _sources(main_profile))
    children = []
    for _, info, profile, _ in found:
        info["offset_s"] = info.pop("start_epoch") - main_epoch
        children.append((info, profile))
    missing = len(started - finished)
    if not children and not missing:
        return main_profile
    merged = merge_processes((dict(main_info, offset_s=0.0), main_profile), children,
                             missing=missing, end="at the detach")
    merged["warnings"] += sorted(problems)
    return merged


def _missing_detail(tokens: set[str]) -> list[str]:
    """Which children left no profile, and why, as far as the system still tells: one still
    running is named by its command line (a helper that outlives the program, such as loky's
    resource tracker); one gone ended without writing (killed by a signal such as SIGKILL)."""
    detail = []
    for token in sorted(tokens):
        pid = token.split("-")[0]
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                command = f.read(400).replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except OSError:
            detail.append(f"process {pid} ended without writing it (killed by a signal)")
            continue
        detail.append(f"process {pid} was still running ({command[:200]})")
    return detail


def _exit_status(appended: bytes) -> str:
    """``exit N`` from the status a child's engine appended to its profile as it exited
    (exitstatus.h); ``exit`` alone when there is none (the child is still exiting, or it
    could not be told)."""
    try:
        status = int(appended)
    except ValueError:
        return "exit"
    return f"exit {status & 0xFF}"  # what its parent's wait sees


def _read_line(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(300).decode("utf-8", "replace")
    except OSError as exc:
        return f"(its error could not be read: {exc.strerror})"


def discard() -> None:
    """Remove the run directory without merging (the main profile could not be built)."""
    carrier = carriers.current()
    if carrier is not None and carrier.config["dir"] is not None:
        _remove_dir(carrier.config["dir"])


def _remove_dir(directory: str) -> None:
    """Remove the run directory: the children's files, and the bytecode cache's directories
    (carrier.bytecode_for_children). With os alone: this may run outside heatline's own
    imports, where `shutil` could be the program's."""
    for _ in range(5):  # a child still running may add a file meanwhile
        for parent, subdirectories, names in os.walk(directory, topdown=False):
            for name in names:
                try:
                    os.unlink(os.path.join(parent, name))
                except OSError:
                    pass
            for name in subdirectories:
                try:
                    os.rmdir(os.path.join(parent, name))
                except OSError:
                    pass
        try:
            os.rmdir(directory)
            return
        except FileNotFoundError:
            return
        except OSError:
            pass


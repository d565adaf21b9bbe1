"""Refuse system calls to this process from now on, as a seccomp profile does (Docker's, a
sandbox's), so that tests can take heatline's fallbacks on a machine that allows the calls.

refuse({"close_range": errno.ENOSYS}) installs a seccomp filter on the calling thread that makes
those calls fail with that errno; threads it creates afterwards (heatline's sampler, started by
heatline.start() on this thread) inherit it. Linux on x86-64 and arm64 only: available() says.
"""

import ctypes
import platform
import struct
import sys

# (audit architecture, {call: number})
_ARCHES = {
    "x86_64": (0xC000003E, {"close_range": 436, "unshare": 272, "process_vm_readv": 310,
                            "perf_event_open": 298}),
    "aarch64": (0xC00000B7, {"close_range": 436, "unshare": 97, "process_vm_readv": 270,
                             "perf_event_open": 241}),
}

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_SECCOMP_RET_ALLOW = 0x7FFF0000
_SECCOMP_RET_ERRNO = 0x00050000
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
_NR_OFFSET, _ARCH_OFFSET = 0, 4  # in struct seccomp_data


def available() -> bool:
    return sys.platform == "linux" and platform.machine() in _ARCHES


def _insn(code, jt, jf, k):
    return struct.pack("=HBBI", code, jt, jf, k)


def refuse(calls: dict) -> None:
    arch, numbers = _ARCHES[platform.machine()]
    program = [
        _insn(_LD_W_ABS, 0, 0, _ARCH_OFFSET),
        _insn(_JEQ_K, 1, 0, arch),
        _insn(_RET_K, 0, 0, _SECCOMP_RET_ALLOW),  # another ABI: not ours to judge
        _insn(_LD_W_ABS, 0, 0, _NR_OFFSET),
    ]
    for name, errno in calls.items():
        program.append(_insn(_JEQ_K, 0, 1, numbers[name]))
        program.append(_insn(_RET_K, 0, 0, _SECCOMP_RET_ERRNO | errno))
    program.append(_insn(_RET_K, 0, 0, _SECCOMP_RET_ALLOW))
    code = ctypes.create_string_buffer(b"".join(program))

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = Program(len(program), ctypes.cast(code, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong,
                           ctypes.c_ulong]
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")

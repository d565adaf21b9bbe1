"""dlopen of a bare name from a library with its own RUNPATH/RPATH must find what it finds
under python, with memory profiling on: heatline's dlopen hook must not make
heatline's module the caller whose search path is used. And a library loaded that way, after
profiling started, still has its native allocations counted."""

import json
import os
import shutil
import subprocess

import pytest

SIBLING = r"""
#include <stdlib.h>
#include <string.h>
/* 48 MiB allocated, touched and freed by a library loaded after profiling started. The block
 * escapes through a volatile pointer: GCC 16 at -O1 would otherwise fold the whole function
 * into "return 7", allocating nothing. */
char *volatile sibling_block;
int sibling_work(void) {
    size_t n = 48u << 20;
    char *p = malloc(n);
    if (p == NULL) return -1;
    sibling_block = p;
    memset(p, 7, n);
    int v = p[n - 1];
    free(p);
    return v;
}
"""

LOADER = r"""
#include <dlfcn.h>
#include <stddef.h>
/* Loads its companion by bare name, found through this library's own RUNPATH/RPATH. */
int load_sibling(void) {
    void *h = dlopen("libhlsibling.so", RTLD_NOW);
    if (h == NULL) return -1;
    int (*work)(void) = (int (*)(void))dlsym(h, "sibling_work");
    return work == NULL ? -2 : work();
}
"""

PROGRAM = r"""
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
print(lib.load_sibling())
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    root = tmp_path_factory.mktemp("dlopen")
    (root / "sibling.c").write_text(SIBLING)
    (root / "loader.c").write_text(LOADER)
    subprocess.run(
        ["gcc", "-O1", "-shared", "-fPIC", "-o", str(root / "libhlsibling.so"),
         str(root / "sibling.c")],
        check=True,
    )
    loaders = {}
    for tag, dtags in (("runpath", "--enable-new-dtags"), ("rpath", "--disable-new-dtags")):
        out = root / f"libloader_{tag}.so"
        subprocess.run(
            ["gcc", "-O1", "-shared", "-fPIC", "-o", str(out), str(root / "loader.c"),
             f"-Wl,{dtags}", "-Wl,-rpath,$ORIGIN", "-ldl"],
            check=True,
        )
        loaders[tag] = str(out)
    return root, loaders


@pytest.mark.skipif(
    bool(os.environ.get("HEATLINE_SANITIZED")),
    reason="ASan's own dlopen interceptor makes libasan the caller: plain python fails too",
)
@pytest.mark.parametrize("tag", ["runpath", "rpath"])
def test_bare_name_dlopen_uses_the_callers_search_path(
    run_heatline, run_python, built, tag, profile_path
):
    root, loaders = built
    script = root / "program.py"
    script.write_text(PROGRAM)
    plain = run_python(str(script), loaders[tag], timeout=120)
    assert plain.stdout == b"7\n", plain.stderr
    result = run_heatline(
        "-q", "-o", profile_path, "--memory-sampling-window", "1M", str(script), loaders[tag],
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == plain.stdout
    with open(profile_path, encoding="utf-8") as handle:
        profile = json.load(handle)
    lines = {entry["line"]: entry for entry in profile["files"][str(script)]["lines"]}
    # The 48 MiB malloc of the late-loaded library is counted at the line that called it.
    assert lines[4]["alloc_native_bytes"] >= 40 << 20, lines[4]

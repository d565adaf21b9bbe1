"""data/reshape.py: a profile without some threads, and with files renamed (the IPython magics'
"Cell In[3]"), stays a valid profile whose figures add up."""

import pytest

from heatline.data import io as profile_io
from heatline.data.queries import stacks
from heatline.data.reshape import renamed_files, without_threads
from test_profile import MS, build, snapshot

# Nothing checked here depends on the CPython version: runs on the main CPython and under ASan,
# not on every version (Makefile, suite-3.X).
pytestmark = pytest.mark.interpreter_independent


def _with_idle_thread():
    snap = snapshot()
    snap["threads"].append({"native_id": 13, "main": False, "python_ns": 0, "native_ns": 0,
                            "system_ns": 0, "unattributed_ns": 40 * MS, "cpu_ns": 0,
                            "engine_wait_ns": 0})
    snap["stacks"].append((((2, 9),), 2, 0, 0, 0))
    return build(snap)


def test_an_idle_thread_left_out_leaves_its_stacks_and_unattributed_time():
    profile = _with_idle_thread()
    assert profile["totals"]["unattributed_s"] == 0.05
    without_threads(profile, {12, 13})
    # 12 (3 ms unattributed) and 13 (40 ms) ran no user line: both go; 11 is kept.
    assert [t["native_id"] for t in profile["threads"]] == [11]
    assert profile["totals"]["unattributed_s"] == 0.007
    assert {stack.thread for stack in stacks(profile)} == {0}
    profile_io.validate(profile)


def test_a_thread_that_ran_user_lines_is_kept_whatever_is_asked():
    profile = _with_idle_thread()
    without_threads(profile, {11})
    assert [t["native_id"] for t in profile["threads"]] == [11, 12, 13]


def test_renamed_files_rename_every_place_a_file_is_named():
    profile = renamed_files(build(), {"/src/work.py": "Cell In[2]"})
    assert list(profile["files"]) == ["Cell In[2]", "/src/app.py"]
    frames = {frame["file"] for frame in profile["stacks"]["frames"]}
    assert frames == {"Cell In[2]", "/src/app.py"}
    profile_io.validate(profile)

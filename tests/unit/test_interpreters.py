"""Which interpreters heatline follows into (run/carrier.py: followable, interpreter_version):
told without running them."""

import os
import sys

from heatline.run import carrier


def _file(path, text="", mode=0o755):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, mode)
    return str(path)


def test_the_version_is_told_by_name_link_or_installation(tmp_path):
    assert carrier.interpreter_version(sys.executable) == sys.version_info[:2]
    assert carrier.interpreter_version(_file(tmp_path / "a/bin/python3.12")) == (3, 12)
    # A link to a versioned name (a venv's python, Debian's python3).
    link = tmp_path / "venv/bin/python"
    link.parent.mkdir(parents=True)
    link.symlink_to(_file(tmp_path / "base/bin/python2.7"))
    assert carrier.interpreter_version(str(link)) == (2, 7)
    # A copy named python: the installation's one lib/pythonX.Y tells.
    copy = _file(tmp_path / "copies/bin/python")
    (tmp_path / "copies/lib/python3.10/site-packages").mkdir(parents=True)
    assert carrier.interpreter_version(copy) == (3, 10)
    # Two versions there, a free-threaded name, or a wrapper script (pyenv's shims): unknown.
    both = _file(tmp_path / "two/bin/python3")
    (tmp_path / "two/lib/python3.10").mkdir(parents=True)
    (tmp_path / "two/lib/python3.11").mkdir(parents=True)
    assert carrier.interpreter_version(both) is None
    assert carrier.interpreter_version(_file(tmp_path / "t/bin/python3.13t")) is None
    shim = _file(tmp_path / "shims/python3", "#!/bin/sh\nexec pyenv exec python3 \"$@\"\n")
    assert carrier.interpreter_version(shim) is None


def test_only_supported_versions_with_an_engine_built_are_followed(tmp_path):
    assert carrier.followable(sys.executable)
    low, high = carrier.SUPPORTED_VERSIONS
    assert low <= sys.version_info[:2] <= high
    assert not carrier.followable(_file(tmp_path / "old/bin/python2.7"))
    assert not carrier.followable(_file(tmp_path / "new/bin/python3.99"))
    assert not carrier.followable(_file(tmp_path / "x/bin/pypy3"))
    # Not named like an interpreter, and not the file of sys.executable.
    assert not carrier.followable(_file(tmp_path / "x/bin/notpython"))

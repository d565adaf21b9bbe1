"""run/carrier.py's launcher_role: a torchrun worker's role from the launcher's variables in the
environment its exec passes (the runs: tests/integration/test_torchrun_nodes.py)."""

import os

import pytest

from heatline.run import carrier

pytestmark = pytest.mark.interpreter_independent

WORKER = {b"RANK": b"3", b"GROUP_RANK": b"1", b"LOCAL_RANK": b"1", b"WORLD_SIZE": b"4",
          b"TORCHELASTIC_RUN_ID": b"job", b"TORCHELASTIC_RESTART_COUNT": b"0"}


def test_a_worker_is_labelled_with_its_rank_node_and_local_rank(monkeypatch):
    for name in ("RANK", "TORCHELASTIC_RUN_ID"):
        monkeypatch.delitem(os.environb, name.encode(), raising=False)
    assert carrier.launcher_role(WORKER) == "rank 3 (node 1, local rank 1)"
    assert carrier.launcher_role({**WORKER, b"TORCHELASTIC_RESTART_COUNT": b"2"}) == (
        "rank 3 (node 1, local rank 1, restart 2)")
    assert carrier.launcher_role({b"RANK": b"0", b"TORCHELASTIC_RUN_ID": b"job"}) == "rank 0"


def test_no_launcher_or_the_parents_own_rank_is_no_rank(monkeypatch):
    # RANK alone (set by hand, or by another launcher) says nothing of torchrun.
    assert carrier.launcher_role({b"RANK": b"3"}) is None
    assert carrier.launcher_role({**WORKER, b"RANK": b"x"}) is None
    # A rank's own subprocess inherits its variables: no rank of its own.
    monkeypatch.setitem(os.environb, b"RANK", b"3")
    monkeypatch.setitem(os.environb, b"TORCHELASTIC_RUN_ID", b"job")
    assert carrier.launcher_role(WORKER) is None
    assert carrier.launcher_role({**WORKER, b"RANK": b"2"}) == "rank 2 (node 1, local rank 1)"


def test_the_exec_environment_carries_the_rank_role(monkeypatch):
    for name in ("RANK", "TORCHELASTIC_RUN_ID"):
        monkeypatch.delitem(os.environb, name.encode(), raising=False)
    seen = []

    class Probe(carrier.Carrier):
        def variables(self, role, pythonpath, parent=None):
            seen.append(role)
            return {}

    probe = Probe({"dir": "/nonexistent", "start_epoch": 0.0, "hook": "/nonexistent"})
    env = {k.decode(): v.decode() for k, v in WORKER.items()}
    probe.env_for(["python3", "-u", "train.py"], env, role="python subprocess")
    probe.env_for(["python3", "-u", "train.py"], env, role="main")
    assert seen == ["rank 3 (node 1, local rank 1)", "main"]

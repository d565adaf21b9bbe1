"""--write-interval S: the profile is written every S seconds during the run (atomically),
without a thread the program could see, and without charging the writing to the program."""

import json
import subprocess
import sys
import textwrap

from heatline.data import validate


def test_profile_is_written_mid_run_and_whole_at_the_end(run_heatline, run_python, program,
                                                         tmp_path):
    out, copy = tmp_path / "prof.json", tmp_path / "mid.json"
    result = run_heatline("-q", "--write-interval", "0.2", "-o", str(out),
                          program("interval_writer.py"), str(out), str(copy), text=True,
                          timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    existing = tmp_path / "existing"
    existing.write_text("{}")  # plain python: nobody writes the file, so it is there already
    plain = run_python(program("interval_writer.py"), str(existing), str(tmp_path / "c"),
                       text=True, timeout=120)
    assert result.stdout == plain.stdout  # the same threads: ['MainThread'] before and after
    mid = json.loads(copy.read_text())
    final = json.loads(out.read_text())
    validate(mid)
    validate(final)
    assert 0 < mid["samples"] < final["samples"]
    assert mid["elapsed_s"] < final["elapsed_s"]
    assert str(program("interval_writer.py")) in final["files"]


# The callback sleeps 0.3 s each time while the program's line spins; sampling is paused
# during the callback, so those seconds are charged to no line.
PAUSED_WHILE_WRITING = textwrap.dedent("""
    import json, sys, time
    from heatline.engine.session import Session

    session = Session(program="spin", argv=[], sampling_interval_s=0.005)
    session.start()
    calls = []

    def write():
        calls.append(time.perf_counter())
        time.sleep(0.3)

    session.every(0.05, write)
    while len(calls) < 3:
        pass  # the spinning line
    session.stop()
    profile = session.profile()
    charged = sum(
        line["python_s"] + line["native_s"] + line["system_s"] + line.get("cpu_wait_s", 0.0)
        for entry in profile["files"].values() for line in entry["lines"]
    )
    print(json.dumps({"calls": len(calls), "charged_s": charged,
                      "elapsed_s": profile["elapsed_s"]}))
""")


def test_time_spent_writing_is_not_charged_to_the_program(tmp_path):
    script = tmp_path / "spin.py"
    script.write_text(PAUSED_WHILE_WRITING)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    slept = 0.3 * figures["calls"]
    # Unpaused, the line would be charged about the whole elapsed time, sleeps included.
    assert figures["charged_s"] <= figures["elapsed_s"] - slept + 0.3, figures
    assert figures["charged_s"] > 0, figures


def test_write_interval_needs_a_file_and_a_positive_period(run_heatline, program):
    script = program("interval_writer.py")
    for args in (["--write-interval", "1", script], ["--write-interval", "0", "-o", "x.json",
                                                       script],
                 ["--write-interval", "soon", "-o", "x.json", script]):
        result = run_heatline(*args, text=True, timeout=120)
        assert result.returncode != 0, args
        assert result.stderr.startswith("heatline: error: "), result.stderr
        assert result.stderr.count("\n") == 1, result.stderr

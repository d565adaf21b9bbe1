"""Inclusive (cumulative) time per function and the call edges, computed from the stacks, in
the terminal's function rows and the HTML report's callers/callees, against the wall times the
program measures of its own calls (tests/targets/nested_calls.py)."""

import json
import math
import os
import re
import sys

import pytest

from heatline.data.queries import call_edges, inclusive_times
from heatline.renderers.html import page_data

TOLERANCE_PP = 3.0
INTERVAL = 0.004


def _tolerance_pp(share, seconds, mean_gap_s=INTERVAL):
    """A share estimated from about seconds / mean_gap_s point samples (the run's own mean gap:
    a loaded machine takes fewer than INTERVAL asks for): 3 pp, or three standard errors of that
    proportion when they are more (as in test_accuracy.py)."""
    p = min(max(share / 100.0, 0.0), 1.0)
    return max(TOLERANCE_PP, 300.0 * math.sqrt(p * (1.0 - p) / max(seconds / mean_gap_s, 1.0)))


@pytest.mark.skipif(bool(os.environ.get("HEATLINE_SANITIZED")),
                    reason="timing is not meaningful under ASan (as in test_accuracy.py)")
def test_inclusive_time_and_call_edges_match_the_program_own_timings(
    run_heatline, program, tmp_path
):
    path, truth_path = tmp_path / "prof.json", tmp_path / "truth.json"
    script = program("nested_calls.py")
    result = run_heatline("--sampling-interval", str(INTERVAL), "-o", str(path), script,
                          str(truth_path), text=True, env={"COLUMNS": "200"}, timeout=300)
    assert result.returncode == 0, result.stderr
    truth = json.loads(truth_path.read_text())
    profile = json.loads(path.read_text())
    inclusive = {qualname: seconds for (file, qualname), seconds in
                 inclusive_times(profile).items() if file == script}
    edges = {(a[1], b[1]): seconds for (a, b), seconds in call_edges(profile).items()
             if a[0] == script and b[0] == script}
    main = inclusive["main"]
    mean_gap = profile["sampled_s"] / profile["samples"]

    def share(seconds):
        return 100.0 * seconds / main

    def true_share(seconds):
        return 100.0 * seconds / truth["main_s"]

    in_outer = 100.0 * edges[("outer", "leaf_b")] / inclusive["outer"]
    checks = {  # name: (measured %, true %, seconds the share is of)
        "outer in main": (share(inclusive["outer"]), true_share(truth["outer_s"]), main),
        "main -> outer": (share(edges[("main", "outer")]), true_share(truth["outer_s"]), main),
        "main -> leaf_a": (share(edges[("main", "leaf_a")]), true_share(truth["direct_a_s"]),
                           main),
        "outer -> leaf_b": (in_outer, 100.0 * truth["b_in_outer_s"] / truth["outer_s"],
                            inclusive["outer"]),
    }
    errors = [f"{name}: {got:.1f}% vs true {want:.1f}%"
              for name, (got, want, seconds) in checks.items()
              if abs(got - want) > _tolerance_pp(want, seconds, mean_gap)]
    assert not errors, "\n".join(errors)
    # A leaf's inclusive time is its own time plus spin()'s; outer's own time is almost none.
    functions = {f["qualname"]: f for entry in profile["files"].values()
                 for f in entry["functions"]}
    spin_in_a = edges[("leaf_a", "spin")]
    assert abs(inclusive["leaf_a"] - spin_in_a) <= 0.03 * inclusive["leaf_a"] + 0.01
    own = functions.get("outer", {})  # no row at all when none of its lines was sampled
    assert sum(own.get(k, 0) for k in ("python_s", "native_s", "system_s", "cpu_wait_s")) < (
        0.05 * inclusive["outer"])

    # The terminal's function rows carry the same inclusive share.
    total = profile["totals"]["attributed_s"]
    row = next(line for line in result.stderr.splitlines() if re.match(r"\s*│?\s*outer\b", line)
               or line.lstrip("│ ").startswith("outer "))
    numbers = [float(x) for x in re.findall(r"\d+\.\d", row)]
    assert any(abs(x - 100.0 * inclusive["outer"] / total) <= 0.1 for x in numbers), row

    # The HTML report's callers/callees come from the same edges.
    # [caller file, caller, callee file, callee, %], matched by the page against function rows
    # [qualname, file, ...]; outer and main, with no time of their own, have rows too.
    data = page_data(profile)
    html_edges = {(e[1], e[3]): e[4] for e in data["edges"] if e[0] == script and e[2] == script}
    assert abs(html_edges[("main", "outer")] - 100.0 * edges[("main", "outer")] / total) < 0.01
    rows = {(row[0], row[1]): row for row in data["functions"]}
    assert abs(rows[("outer", script)][6] - 100.0 * inclusive["outer"] / total) < 0.01
    assert ("main", script) in rows


def test_html_functions_show_callers_and_callees_when_clicked(run_heatline, program, tmp_path):
    from _tools import chromium_dom

    out = tmp_path / "report.html"
    # 2,000,000 iterations, about 0.7 s: a tenth of that (as it was) left the callers with no
    # sample at all when the sampler thread was kept off the CPUs for the whole run (seen under
    # load: no "called by" to show).
    result = run_heatline("-q", "--html", "-o", str(out), program("nested_calls.py"),
                          str(tmp_path / "truth.json"), "2000000", text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    # The page as a user clicks outer's row: a copy with a click added after the page's script
    # (inline scripts are what the page's Content-Security-Policy allows).
    click = ('<script>Array.prototype.forEach.call(document.querySelectorAll("tr.fn"), '
             'function (tr) { if (tr.firstChild.textContent === "outer") tr.click(); });'
             '</script></body>')
    clicked = tmp_path / "clicked.html"
    clicked.write_text(out.read_text().replace("</body>", click))
    dom = chromium_dom(clicked.as_uri())
    assert 'id="error"' not in dom, dom[:2000]
    script = program("nested_calls.py")
    assert f"called by main ({script})" in dom, dom[-3000:]
    assert f"calls leaf_a ({script})" in dom and f"calls leaf_b ({script})" in dom


def test_a_function_sharing_a_line_with_its_generator_has_no_more_own_time_than_inclusive(
    run_heatline, program, tmp_path
):
    """Two functions on one line (a function and its generator expression): the line's time is
    split by the function whose frame ran it, so each function's own time is at most its
    inclusive time (the time it was anywhere on the stack)."""
    path = tmp_path / "prof.json"
    script = program("shared_line.py")
    result = run_heatline("-o", str(path), script, "1.0", text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    profile = json.loads(path.read_text())
    inclusive = inclusive_times(profile)
    # Every figure is rounded to the microsecond: a function's own time adds four of them (its
    # kinds), its inclusive time one per stack it is on.
    rounding = 0.5e-6 * (4 + len(profile["stacks"]["entries"]))
    slack = profile["stacks"]["dropped_s"] + rounding
    own = {f["qualname"]: f["python_s"] + f["native_s"] + f["system_s"] + f["cpu_wait_s"]
           for f in profile["files"][script]["functions"]}
    # 3.9 and 3.10 code objects have no qualified name: the generator is plain <genexpr> there.
    genexpr = "squares.<locals>.<genexpr>" if sys.version_info >= (3, 11) else "<genexpr>"
    assert genexpr in own, own
    for qualname, seconds in own.items():
        assert seconds <= inclusive[(script, qualname)] + slack, (qualname, seconds, inclusive)
    # The line is listed once, with both functions' time.
    line = next(x for x in profile["files"][script]["lines"] if "def squares" in x["source"])
    line_s = line["python_s"] + line["native_s"] + line["system_s"] + line["cpu_wait_s"]
    assert abs(line_s - own[genexpr] - own.get("squares", 0.0)) < 1e-5  # 12 rounded figures

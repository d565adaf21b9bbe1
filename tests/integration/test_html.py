"""The HTML report in a real browser: headless Chromium loads it with the network pointed
nowhere, and the rendered DOM must have the rows, the flame graph, no script error and no
external reference."""

import json
import os
import re
import subprocess

import pytest

import heatline


from _tools import require, tool_env

# Nothing checked here depends on the CPython version: runs on the main CPython and under ASan,
# not on every version (Makefile, suite-3.X).
pytestmark = pytest.mark.interpreter_independent

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _chromium(*args):
    chromium = require("chromium", "chromium-browser")
    command = [
        chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-extensions", "--disable-background-networking",
        # Any network request would fail: no proxy exists there, and no name resolves.
        "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
        "--virtual-time-budget=5000", *args,
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False,
                            env=tool_env())
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def _report(run_heatline, program, tmp_path, name):
    out = tmp_path / "report.html"
    result = run_heatline("-q", "--html", "-o", str(out), program(name), text=True)
    assert result.returncode == 0, result.stderr
    return out


def test_html_report_renders_rows_and_flame_graph_offline(run_heatline, program, tmp_path):
    out = _report(run_heatline, program, tmp_path, "hostile.py")
    text = out.read_text()
    # The page outside its JSON data (which holds the program's source text as data).
    page = re.sub(r'(<script id="heatline-data" type="application/json">).*?(</script>)',
                  r"\1\2", text, flags=re.S)
    assert len(page) < len(text)
    # Self-contained: nothing to fetch (the SVG namespace is a name, not a request).
    assert not re.search(r"""(?:src|href)\s*=|url\(|@import|fetch\(|XMLHttpRequest""", page)
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) <= {"http://www.w3.org/2000/svg"}
    dom = _chromium("--dump-dom", out.as_uri())
    assert 'data-rendered="1"' in dom
    assert 'id="error"' not in dom, dom[:2000]
    assert "<title>heatline report</title>" in dom  # the hostile source did not run
    # Every 'pwned' outside the page's own scripts is inside text shown escaped (&lt;...&gt;):
    # the hostile markup of the hot line and of the def line's comment became no element.
    outside = re.sub(r"<script.*?</script>", "", dom, flags=re.S)
    # The summary quotes the hostile line, cut short (so its &gt; may be cut off): the list
    # holds only its own items and code elements, then is left out of the check below.
    # (Which line it quotes depends on the run's time split: the while loop's line, or the
    # hostile one; whichever it is, it holds no element but its own.)
    findings = re.search(r'<ul id="findings">(.*?)</ul>', outside, flags=re.S).group(1)
    assert set(re.findall(r"</?([a-z]+)", findings)) <= {"li", "code"}
    outside = outside.replace(findings, "")
    assert "pwned" not in re.sub(r"&lt;[^<>]*?pwned[^<>]*?&gt;", "", outside)
    assert "<img" not in outside
    # The hostile line is a row whose source cell shows it as text.
    assert "&lt;/script&gt;&lt;script&gt;document.title='pwned'&lt;/script&gt;" in dom
    assert re.search(r'<tr class="line hot">', dom)
    assert '<tr class="fn"><td class="name">hostile_spin</td>' in dom  # a function row
    assert "hostile_spin (hostile.py:" in dom  # a flame graph frame
    # No heatline frames: a flame graph frame is "function (FILE.py:LINE)".
    heatline_dir = os.path.dirname(os.path.abspath(heatline.__file__))
    for package in ("run", "cli", "engine"):
        for name in os.listdir(os.path.join(heatline_dir, package)):
            if name.endswith(".py") and name != "__init__.py":
                assert f"({name}:" not in dom, name


def test_html_report_renders_a_10000_line_profile(run_heatline, program, tmp_path):
    """Every line of a 10,000-line file with time (the profile keeps only such lines for long
    files) becomes a row; the file stays small enough to open quickly."""
    recorded = tmp_path / "p.json"
    result = run_heatline("-q", "-o", str(recorded), program("hostile.py"), text=True)
    assert result.returncode == 0, result.stderr
    profile = json.loads(recorded.read_text())
    entry = next(iter(profile["files"].values()))
    template = max(entry["lines"], key=lambda line: line["python_s"])
    entry["lines"] = [dict(template, line=n, source=f"x{n} = {n}  # <b>&") for n in
                      range(1, 10001)]
    big = tmp_path / "big.json"
    big.write_text(json.dumps(profile))
    out = tmp_path / "big.html"
    result = run_heatline("view", str(big), "-o", str(out), text=True)
    assert result.returncode == 0, result.stderr
    assert out.stat().st_size < 5_000_000
    dom = _chromium("--dump-dom", out.as_uri())
    assert 'data-rendered="1"' in dom and 'id="error"' not in dom
    assert dom.count('<tr class="line hot">') == 10000
    assert "x9999 = 9999  # &lt;b&gt;&amp;" in dom


def test_screenshot_for_the_docs(run_heatline, tmp_path):
    """Keeps docs/img/html-report.png reproducible: `HEATLINE_DOCS_SCREENSHOT=1 pytest -k
    screenshot` rewrites it from examples/demo.py; otherwise the screenshot goes to tmp."""
    out = tmp_path / "demo.html"
    result = run_heatline("-q", "-o", str(out), os.path.join(REPO, "examples", "demo.py"),
                          text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    png = (os.path.join(REPO, "docs", "img", "html-report.png")
           if os.environ.get("HEATLINE_DOCS_SCREENSHOT") else str(tmp_path / "shot.png"))
    _chromium("--hide-scrollbars", "--window-size=1200,1400", f"--screenshot={png}",
              out.as_uri())
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def _rendered_flame_root(dom):
    """The flame graph's root frame as the page drew it: (seconds, the rest of its text)."""
    found = re.search(r'<div id="flame"[^>]*><div class="(\w+)"[^>]*>all ([0-9.]+) s([^<]*)</div>',
                      dom)
    assert found, dom[dom.find('id="flame"'):][:500]
    return float(found.group(2)), found.group(3)


def test_idle_threads_leave_the_flame_graph_until_asked_for(run_heatline, program, tmp_path):
    """Six threads blocked for the whole run beside a main thread busy for about 1 s: the flame
    graph's root is the main thread's time, not seven threads' (which would make the root
    about seven times the run's wall time), and a box offers to show them. Frames are coloured
    by their time's kind."""
    recorded = tmp_path / "idle.json"
    result = run_heatline("-q", "-o", str(recorded), program("idle_threads.py"), text=True)
    assert result.returncode == 0, result.stderr
    truth = json.loads(result.stdout)
    profile = json.loads(recorded.read_text())
    from heatline.renderers.html import page_data

    data = page_data(profile)
    threads = {node[0]: node for node in data["flame"][2]}
    idle = {name for name, node in threads.items() if node[4]}
    assert idle == {f"{name} (thread {native_id})"
                    for name, native_id in zip(truth["idle_names"], truth["idle"])}, threads.keys()
    [main] = [node for node in threads.values() if node[0].startswith("main thread")]
    assert not main[4]
    # Every frame knows its time's kinds: the busy loop's are running time (or, on a busy
    # machine, waiting for a CPU), the waits' system.
    assert main[3][0] + main[3][1] + main[3][3] >= 0.9 * main[1]
    assert all(node[3][2] >= 0.95 * node[1] for name, node in threads.items() if name in idle)

    out = tmp_path / "idle.html"
    result = run_heatline("view", str(recorded), "-o", str(out), text=True)
    assert result.returncode == 0, result.stderr
    dom = _chromium("--dump-dom", out.as_uri())
    assert 'data-rendered="1"' in dom and 'id="error"' not in dom
    root_s, note = _rendered_flame_root(dom)
    # The main thread's time: its whole run (elapsed bounds it; every idle thread alone is
    # about as long, so seven threads' root would be about seven times it).
    assert root_s == pytest.approx(main[1], abs=0.001) and root_s <= profile["elapsed_s"]
    assert note == " (idle threads hidden)"
    label = re.search(r'<span id="idle-text">([^<]*)</span>', dom).group(1)
    assert label.startswith("show 6 idle threads (running under 5% of their time; "), label
    # Each frame is coloured by the kind most of its time was: the main thread's by its own.
    flame = dom[dom.index('<div id="flame"'):]
    kinds = ("python", "native", "system", "cpu_wait")
    kind = kinds[main[3].index(max(main[3]))]
    assert re.search(rf'<div class="{kind}"[^>]*>{re.escape(main[0])} ', flame), flame[:1000]
    assert set(re.findall(r'<div class="(\w+)"', flame)) <= set(kinds)


def test_the_page_puts_hot_lines_first_and_labels_the_memory_plot(run_heatline, program,
                                                                  tmp_path):
    out = tmp_path / "mem.html"
    result = run_heatline("-q", "-o", str(out), program("idle_threads.py"), text=True)
    assert result.returncode == 0, result.stderr
    dom = _chromium("--dump-dom", out.as_uri())
    assert 'data-rendered="1"' in dom and 'id="error"' not in dom
    # The hot lines come before the memory plot and the flame graph; the full source is last.
    order = [dom.index(marker) for marker in ('<h2>Hot lines</h2>', "<h2>Memory over time</h2>",
                                              "<h2>Flame graph</h2>", "<h2>Source</h2>")]
    assert order == sorted(order)
    hot = re.search(r'<table id="hot">(.*?)</table>', dom, re.S).group(1)
    assert "idle_threads.py:" in hot and "sum(range(200))" in hot
    # The memory plot has both axes' titles and ticks with units.
    memory = re.search(r'<div id="memory">(.*?)</svg>', dom, re.S).group(1)
    assert "time since the start (s)" in memory and "memory held" in memory
    assert re.search(r">[0-9.]+ (KiB|MiB)</text>", memory) and re.search(r">[0-9.]+ s</text>",
                                                                         memory)


def test_each_process_is_labelled_in_the_flame_graph_and_threads(run_heatline, program,
                                                                 tmp_path):
    recorded = tmp_path / "pool.json"
    result = run_heatline("-q", "-o", str(recorded), program("children_pool.py"), "fork",
                          text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    profile = json.loads(recorded.read_text())
    from heatline.renderers.html import page_data

    data = page_data(profile)
    labels = {node[0] for node in data["flame"][2]}
    want = {f"pid {p['pid']} ({p['role']})" for p in profile["processes"]}
    assert labels == want and sum(p["role"] == "Pool worker" for p in profile["processes"]) == 2
    assert {row[0].split(" of ")[1] for row in data["threads"]} == want

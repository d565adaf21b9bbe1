"""The HTML report in a real browser: headless Chromium loads it with the network pointed
nowhere, and the rendered DOM must have the rows, the flame graph, no script error and no
external reference."""

import json
import os
import re
import subprocess

import pytest

import heatline


from _tools import chromium_dom, require, require_module, tool_env

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


def _attributes(tag):
    return dict(re.findall(r'([\w-]+)="([^"]*)"', tag))


def _timeline_svg(dom):
    """The timeline's <svg> attributes and its bars: [(attributes, title)]."""
    found = re.search(r'<div id="timeline">(<svg [^>]*>)(.*?)</svg>', dom, re.S)
    assert found, dom[dom.find('id="timeline-box"'):][:500]
    bars = [(_attributes(tag), title) for tag, title in
            re.findall(r"<rect ([^>]*)><title>([^<]*)</title></rect>", found.group(2))]
    return _attributes(found.group(1)), bars


def _memory_scale(dom):
    found = re.search(r'<div id="memory">(<svg [^>]*>)', dom)
    assert found
    svg = _attributes(found.group(1))
    return float(svg["data-x0"]), float(svg["data-px-per-s"])


def test_timeline_draws_each_step_and_region_span_where_it_ran(run_heatline, program, tmp_path):
    """tests/targets/steps_loop.py --slow 7: ten steps, each with a "compute" and a "data"
    region, step 7 sleeping 0.5 s. The timeline has one bar per step and per region span, at
    its start and as wide as it lasted on the memory plot's time scale, step 7 marked slow."""
    recorded = tmp_path / "steps.json"
    result = run_heatline("-q", "-o", str(recorded), program("steps_loop.py"), "--slow", "7",
                          text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    truth = json.loads(result.stdout)
    profile = json.loads(recorded.read_text())
    steps = profile["steps"]
    assert steps["count"] == len(truth["durations_s"]) == 10
    out = tmp_path / "steps.html"
    result = run_heatline("view", str(recorded), "-o", str(out), text=True)
    assert result.returncode == 0, result.stderr
    dom = chromium_dom(out.as_uri())
    assert 'data-rendered="1"' in dom and 'id="error"' not in dom
    assert '<div id="timeline-box">' in dom
    svg, bars = _timeline_svg(dom)
    x0, px_per_s = float(svg["data-x0"]), float(svg["data-px-per-s"])
    # the memory plot's time scale
    assert (x0, px_per_s) == _memory_scale(dom)
    ends = [s + d for s, d in zip(steps["started_s"], steps["durations_s"])]
    ends += [end for region in profile["regions"] for _, _, end in region["slices"]]
    end = max(ends + [profile["memory_timeline"][-1][0]])
    assert re.search(rf">{end:.2f} s</text><text [^>]*>time since the start \(s\)</text>", dom)

    def placed(attributes, start, seconds):
        """Within a pixel of where start and seconds put it (a bar is at least 0.5 px)."""
        x, width = float(attributes["x"]), float(attributes["width"])
        return (abs(x - (x0 + start * px_per_s)) <= 1
                and abs(width - max(seconds * px_per_s, 0.5)) <= 1)

    step_bars = [(a, title) for a, title in bars if a["class"].startswith("step")]
    assert len(step_bars) == steps["count"]
    from heatline.data.summary import slow_steps

    warmup, slow, _ = slow_steps(steps["durations_s"])
    assert 6 in slow  # step 7 (0-based 6), which slept 0.5 s
    for index, (attributes, title) in enumerate(step_bars):
        number = index + 1
        assert attributes["data-step"] == str(number)
        assert placed(attributes, steps["started_s"][index], steps["durations_s"][index]), \
            (attributes, steps["started_s"][index], steps["durations_s"][index])
        kind = "slow" if index in slow else "warmup" if index in warmup else None
        assert (kind in attributes["class"].split()) if kind else \
            attributes["class"] in ("step", "step alt"), attributes
        assert title.startswith(f"step {number}: "), title
    # step 7 by the program's own clock: it slept 0.5 s; its bar is at least that wide
    assert truth["durations_s"][6] >= 0.5
    slow_bar, slow_title = step_bars[6]
    assert float(slow_bar["width"]) >= 0.5 * px_per_s - 1
    assert re.fullmatch(r"step 7: 0\.\d\d s \(slow\)", slow_title), slow_title
    # the regions: a bar per kept span, where it ran, on one lane (the main thread's)
    region_bars = [a for a, _ in bars if a["class"] == "region"]
    assert len(region_bars) == sum(len(r["slices"]) for r in profile["regions"])
    for region in profile["regions"]:
        drawn = [a for a in region_bars if a["data-path"] == region["path"]]
        assert len(drawn) == len(region["slices"]) == region["count"] == 10, region["path"]
        for attributes, (_, start, stop) in zip(drawn, sorted(region["slices"],
                                                              key=lambda s: s[1])):
            assert placed(attributes, start, stop - start), (attributes, start, stop)
    lanes = re.findall(r'<text class="lane"[^>]*>([^<]*)</text>', dom)
    assert len(lanes) == 2 and lanes[0].startswith("main thread") and lanes[1] == "steps"
    assert '<div class="note">' not in dom

    # Bounded, and a region's name is text: 4000 more spans of a hostile name draw the
    # earliest 3000 spans of all, and say how many were left out.
    hostile = '<img src=x onerror="document.title=1">'
    tid = profile["regions"][0]["slices"][0][0]
    profile["regions"].append({**profile["regions"][0], "name": hostile, "path": hostile,
                               "slices": [[tid, 0.0001 * i, 0.0001 * i + 0.00005]
                                          for i in range(4000)], "slices_dropped": 7})
    big = tmp_path / "big.json"
    big.write_text(json.dumps(profile))
    result = run_heatline("view", str(big), "-o", str(out), text=True)
    assert result.returncode == 0, result.stderr
    dom = chromium_dom(out.as_uri())
    assert 'data-rendered="1"' in dom and 'id="error"' not in dom
    _, bars = _timeline_svg(dom)
    region_bars = [a for a, _ in bars if a["class"] == "region"]
    assert len(region_bars) == 3000
    left_out = 20 + 4000 - 3000 + 7
    assert f"{left_out} region spans not drawn (the earliest 3000 are)" in dom
    assert "<img" not in re.sub(r"<script.*?</script>", "", dom, flags=re.S)


def _module_rows(dom):
    """The module tree's rows: [(root:path, depth, indentation px, hidden)]."""
    table = re.search(r'<table id="modules">(.*?)</table>', dom, re.S).group(1)
    rows = []
    for tr, td in re.findall(r'<tr (class="module[^>]*)><td ([^>]*)>', table):
        row, cell = _attributes(tr), _attributes(td)
        indent = re.search(r"padding-left: (\d+)px", cell["style"]).group(1)
        rows.append((row["data-path"], int(row["data-depth"]), int(indent), "hidden" in tr))
    return rows


def test_module_tree_puts_each_module_under_its_caller_and_folds(run_heatline, program,
                                                                 tmp_path):
    """tests/targets/torch_modules.py: a Net holding two Stacks of three Linear layers, and a
    Failing module called as a root of its own. The tree lists each module once, each after
    the nearest module above it in its path with more indentation, its subtree right after
    it; a click on a row hides its subtree, another shows it again (but a folded row's)."""
    require_module("torch", "torch")
    recorded = tmp_path / "torch.json"
    result = run_heatline("-q", "-o", str(recorded), program("torch_modules.py"),
                          str(tmp_path / "truth.json"), text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    profile = json.loads(recorded.read_text())
    modules = {f"{m['root']}:{m['path']}" for m in profile["modules"]}
    assert {"Net:", "Net:small", "Net:big.layers.2", "Failing:"} <= modules
    out = tmp_path / "torch.html"
    result = run_heatline("view", str(recorded), "-o", str(out), text=True)
    assert result.returncode == 0, result.stderr
    page = out.read_text()
    dom = chromium_dom(out.as_uri())
    assert 'data-rendered="1"' in dom and 'id="error"' not in dom
    rows = _module_rows(dom)
    keys = [key for key, *_ in rows]
    assert sorted(keys) == sorted(modules)  # each once
    assert not any(hidden for *_, hidden in rows)

    def parent(key):
        root, path = key.split(":")
        parts = path.split(".") if path else []
        for cut in range(len(parts) - 1, -1, -1):
            if f"{root}:{'.'.join(parts[:cut])}" in modules:
                return f"{root}:{'.'.join(parts[:cut])}"
        return None

    for i, (key, depth, indent, _) in enumerate(rows):
        up = parent(key)
        if up is None:
            assert depth == 0
            continue
        j = keys.index(up)
        assert j < i and rows[j][1] == depth - 1 and rows[j][2] < indent, (key, up)
        assert all(row[1] >= depth for row in rows[j + 1:i])  # in its parent's subtree
    assert keys.index("Net:big") < keys.index("Net:big.layers.2") < keys.index("Net:small")

    def clicked(*paths):
        """The DOM after clicking the rows of these keys in turn."""
        script = "".join(f'document.querySelector(\'tr[data-path="{p}"]\').click();'
                         for p in paths)
        clicks = tmp_path / "clicks.html"
        clicks.write_text(page.replace("</body>", f"<script>{script}</script></body>"))
        dom = chromium_dom(clicks.as_uri())
        assert 'id="error"' not in dom
        return {key: hidden for key, _, _, hidden in _module_rows(dom)}

    hidden = clicked("Net:")
    assert all(hidden[key] == (key.startswith("Net:") and key != "Net:") for key in modules)
    hidden = clicked("Net:small", "Net:", "Net:")  # small folded inside, Net folded and back
    assert all(hidden[key] == key.startswith("Net:small.") for key in modules), hidden


def test_no_timeline_or_module_tree_without_regions_steps_or_modules(run_heatline, program,
                                                                    tmp_path):
    recorded = tmp_path / "plain.json"
    result = run_heatline("-q", "-o", str(recorded), program("hostile.py"), text=True)
    assert result.returncode == 0, result.stderr
    profile = json.loads(recorded.read_text())
    assert not profile.get("regions") and not profile.get("steps") and not profile.get("modules")
    from heatline.renderers.html import page_data

    assert page_data(profile)["timeline"] is None and page_data(profile)["modules"] == []
    out = tmp_path / "plain.html"
    result = run_heatline("view", str(recorded), "-o", str(out), text=True)
    assert result.returncode == 0, result.stderr
    dom = chromium_dom(out.as_uri())
    assert 'data-rendered="1"' in dom and 'id="error"' not in dom
    assert '<div id="timeline-box" hidden="">' in dom and "<svg" not in dom.split(
        'id="timeline"')[1].split("</div>")[0]
    assert '<div id="modules-box" hidden="">' in dom and 'class="module' not in dom


def test_a_distributed_engines_tasks_are_a_table(run_heatline, program, tmp_path):
    """A profile with a `tasks` table (a Dask or Ray job's, written here by hand on a real
    profile): one row per task, its name as text, its figures as the profile has them."""
    recorded = tmp_path / "plain.json"
    result = run_heatline("-q", "-o", str(recorded), program("hostile.py"), text=True)
    assert result.returncode == 0, result.stderr
    profile = json.loads(recorded.read_text())
    hostile = '<img src=x onerror="document.title=2">'
    profile["tasks"] = [
        {"name": "inc", "count": 12, "wall_s": 1.5, "python_s": 1.25, "native_s": 0.125,
         "system_s": 0.0, "alloc_bytes": 3 << 20, "lines": []},
        {"name": hostile, "count": 1, "wall_s": 0.5, "python_s": 0.25, "native_s": 0.0,
         "system_s": 0.25, "alloc_bytes": 0, "lines": []}]
    edited = tmp_path / "tasks.json"
    edited.write_text(json.dumps(profile))
    out = tmp_path / "tasks.html"
    result = run_heatline("view", str(edited), "-o", str(out), text=True)
    assert result.returncode == 0, result.stderr
    dom = chromium_dom(out.as_uri())
    assert 'data-rendered="1"' in dom and 'id="error"' not in dom
    table = dom.split('<table id="tasks">')[1].split("</table>")[0]
    rows = re.findall(r"<tr>(.*?)</tr>", table)
    cells = [re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row) for row in rows]
    assert cells[0] == ["task", "runs", "wall s", "Python s", "native s", "system s",
                        "alloc MiB"]
    assert cells[1] == ["inc", "12", "1.500", "1.250", "0.125", "0.000", "3.000"]
    assert cells[2][1:] == ["1", "0.500", "0.250", "0.000", "0.250", "0.000"]
    assert "<img" not in re.sub(r"<script.*?</script>", "", dom, flags=re.S)

"""The HTML report's page: inline CSS and plain JavaScript, no network.

The renderer puts the data (JSON, escaped for a <script> element) in place of the marker.
The script builds every element with createElement/textContent, never innerHTML.
"""

PAGE = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>heatline report</title>
<style>
body{font:13px system-ui,sans-serif;margin:0 16px 40px;color:#222}
h1{font-size:18px}h2{font-size:15px;margin-top:24px}
table{border-collapse:collapse}td,th{padding:1px 6px;text-align:right;white-space:nowrap}
th{cursor:pointer;background:#eee;position:sticky;top:0}
td.src{text-align:left;font-family:ui-monospace,monospace;white-space:pre}
td.name{text-align:left}
tr.hot td{background:#ffe3d6}tr.hot td.src{font-weight:600}
tr.gap td{color:#888;cursor:pointer;text-align:left;font-style:italic}
.ln{color:#888}
#flame{position:relative;overflow-x:hidden;overflow-y:auto;max-height:480px;border:1px solid #ccc;font:11px monospace}
#flame div{position:absolute;height:17px;line-height:17px;overflow:hidden;white-space:nowrap;
 border-right:1px solid #fff;box-sizing:border-box;padding-left:2px;cursor:pointer;background:#f4a261}
#flame div.python,.key.python{background:#f4a261}#flame div.native,.key.native{background:#8ecae6}
#flame div.system,.key.system{background:#d3d6da}#flame div.cpu_wait,.key.cpu_wait{background:#c9a0dc}
#flame div.match{background:#e76f51;color:#fff}
.key{display:inline-block;width:12px;height:12px;margin:0 4px 0 10px;vertical-align:-2px;border:1px solid #999}
#flame-legend{margin:4px 0;color:#444}
#memory svg text{font:11px system-ui,sans-serif;fill:#444}
#error{color:#b00;font-weight:600}
.edges{font-size:12px;margin:4px 0 8px 24px}
#findings-box{background:#fff8e1;border:1px solid #f0d58c;padding:2px 12px;margin-top:10px;max-width:1100px}
#findings-box h2{margin-top:8px}#findings{padding-left:18px;font-size:14px;line-height:1.45}#findings li{margin-bottom:4px}
#timeline svg text{font:11px system-ui,sans-serif;fill:#444}#timeline svg text.lane{font-weight:600;fill:#222}
#timeline rect.step{fill:#9fb8cc}#timeline rect.step.alt{fill:#c9d8e4}#timeline rect.step.warmup{fill:#f2c57c}#timeline rect.step.slow{fill:#e0533d}
#timeline svg text.bar{fill:#222;pointer-events:none}.note{color:#666}
#timeline-legend span.key{margin-left:12px}
table#modules tr.parent td.name{cursor:pointer}table#modules td.name span.toggle{display:inline-block;width:12px;color:#666}
#findings code{font:12px ui-monospace,monospace;background:#f3ecd2;padding:0 2px}
</style></head><body>
<h1>heatline report</h1>
<div id="summary"></div>
<div id="findings-box" hidden><h2>Summary</h2><ul id="findings"></ul></div>
<div id="warnings"></div>
<div id="hot-box" hidden><h2>Hot lines</h2><div>The lines with the most time; all lines are under Source, at the end.</div><table id="hot"></table></div>
<h2>Memory over time</h2><div id="memory"></div>
<div id="timeline-box" hidden><h2>Timeline</h2><div>Regions on each thread (a nested region one row lower) and the steps, on the memory plot's time axis; hover a bar for its name and time.</div><div id="timeline"></div><div id="timeline-legend"></div></div>
<div id="gpu"></div>
<div id="native"></div>
<h2>Flame graph</h2>
<div>Search <input id="search" size="30"> <button id="reset">reset zoom</button> (click a frame to zoom)
<label id="idle-label" hidden><input type="checkbox" id="show-idle"> <span id="idle-text"></span></label></div>
<div id="flame-legend">Each frame is coloured by where most of its time went:<span class="key python"></span>Python<span class="key native"></span>native<span class="key system"></span>system (blocked)<span id="cpu-wait-key" hidden><span class="key cpu_wait"></span>waiting for a CPU</span></div>
<div id="flame"></div>
<h2>Functions</h2><div>Click a column to sort, a row for its callers and callees.</div>
<table id="functions"></table>
<h2>Threads</h2><table id="threads"></table>
<div id="processes-box" hidden><h2>Processes</h2><table id="processes"></table></div>
<div id="regions-box" hidden><h2>Regions</h2><table id="regions"></table></div>
<div id="tasks-box" hidden><h2>Tasks</h2><div>The engine's tasks across its workers: runs and wall time from the engine's own record; the split is sampled over the stacks that ran each task's function.</div><table id="tasks"></table></div>
<div id="modules-box" hidden><h2>Modules</h2><div>Each module under the module that called it (click a row to fold its modules away); wall s: its forward calls, the modules they call included; self s: without them; the split is sampled, inclusive.</div><table id="modules"></table></div>
<h2>Leaks</h2><div id="leaks"></div>
<h2>Source</h2><div id="files"></div>
<script id="heatline-data" type="application/json">/*HEATLINE_DATA*/</script>
<script>
"use strict";
window.onerror = function (message) {
  var d = document.createElement("div"); d.id = "error";
  d.textContent = "heatline-report-error: " + message;
  document.body.insertBefore(d, document.body.firstChild);
};
var D = JSON.parse(document.getElementById("heatline-data").textContent);
function el(tag, text, cls) {
  var e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}
function pct(v) { return v ? v.toFixed(1) + "%" : ""; }
function ms(seconds) { var v = seconds * 1000; return v < 100 ? String(Number(v.toPrecision(3))) : v.toFixed(0); }
function bytes(v) {
  if (!v) return "";
  var u = [" B", " KiB", " MiB", " GiB", " TiB"], i = 0;  // binary: the terminal's and check's units
  while (Math.abs(v) >= 1024 && i < 4) { v /= 1024; i++; }
  return v.toFixed(i ? 1 : 0) + u[i];
}
var SVG = "http://www.w3.org/2000/svg";
function plot(values, w, h, times) {
  var s = document.createElementNS(SVG, "svg");
  s.setAttribute("width", w); s.setAttribute("height", h);
  if (!values.length) return s;
  var max = Math.max.apply(null, values) || 1, n = values.length, pts = [];
  for (var i = 0; i < n; i++) {
    var x = n > 1 ? (times ? times[i] / (times[n - 1] || 1) : i / (n - 1)) * (w - 2) + 1 : w / 2;
    pts.push(x.toFixed(1) + "," + (h - 1 - values[i] / max * (h - 2)).toFixed(1));
  }
  var p = document.createElementNS(SVG, "polyline");
  p.setAttribute("points", pts.join(" ")); p.setAttribute("fill", "none");
  p.setAttribute("stroke", "#2a6f97"); p.setAttribute("stroke-width", "1.5");
  s.appendChild(p);
  return s;
}
// Summary and warnings
(function () {
  var s = D.summary, t = el("div");
  t.appendChild(el("div", "Program: " + D.program));
  t.appendChild(el("div", "Elapsed " + (s.elapsed_s || 0).toFixed(3) + " s" +
    (s.profiled_s === null || s.profiled_s === undefined ? "" : ", of which " + s.profiled_s.toFixed(3) + " s profiled") + ", CPU " +
    (s.cpu_s || 0).toFixed(3) + " s, " + s.samples + (s.samples === 1 ? " sample" : " samples") + ", peak memory " +
    (bytes(s.peak_bytes) || "0") + ", Python " + s.python_version + ", heatline " + D.version));
  document.getElementById("summary").appendChild(t);
  D.warnings.forEach(function (w) { document.getElementById("warnings").appendChild(el("div", "warning: " + w)); });
})();
// The summary's sentences; `quoted` source shown as code (as text, never parsed as HTML)
(function () {
  if (!D.findings || !D.findings.length) return;
  document.getElementById("findings-box").hidden = false;
  var list = document.getElementById("findings");
  D.findings.forEach(function (f) {
    var li = el("li", null, "finding"); li.setAttribute("data-rule", f[0]);
    f[1].split("`").forEach(function (part, i) { li.appendChild(i % 2 ? el("code", part) : document.createTextNode(part)); });
    list.appendChild(li);
  });
})();
// A line's share of the time: Python + native + system + waiting for a CPU
function lineTime(l) { return l[2] + l[3] + l[4] + (l[13] || 0); }
// Hot lines: the busiest lines of every file, near the top (the annotated source is last)
(function () {
  var all = [];
  D.files.forEach(function (f) { f.lines.forEach(function (l) { if (lineTime(l) > 0) all.push([f.path, l]); }); });
  if (!all.length) return;
  all.sort(function (a, b) { return lineTime(b[1]) - lineTime(a[1]); });
  document.getElementById("hot-box").hidden = false;
  var t = document.getElementById("hot"), h = el("tr");
  ["line", "time", "Python", "native", "system"].concat(D.cpu_wait ? ["CPU wait"] : [], ["alloc", "source"]).forEach(function (c) { h.appendChild(el("th", c)); });
  t.appendChild(h);
  all.slice(0, 10).forEach(function (item) {
    var l = item[1], tr = el("tr", null, "hotline");
    if (lineTime(l) >= D.hot_pct) tr.className = "hotline hot";
    tr.appendChild(el("td", item[0].split("/").pop() + ":" + l[0], "name"));
    tr.appendChild(el("td", pct(lineTime(l))));
    tr.appendChild(el("td", pct(l[2]))); tr.appendChild(el("td", pct(l[3]))); tr.appendChild(el("td", pct(l[4])));
    if (D.cpu_wait) tr.appendChild(el("td", pct(l[13])));
    tr.appendChild(el("td", bytes(l[5]))); tr.appendChild(el("td", l[1].trim(), "src"));
    t.appendChild(tr);
  });
})();
// An SVG line chart with axes: ticks at 0, half and the most of each, labelled by `fy` and `fx`,
// and the axes' titles.
// `xmax`: the time axis's end (the x axis is shared with the timeline: TIME_*).
function chart(points, w, h, fy, fx, ytitle, xtitle, xmax) {
  var L = TIME_L, B = 34, T = 8, R = TIME_R, pw = w - L - R, ph = h - T - B;
  var s = document.createElementNS(SVG, "svg");
  s.setAttribute("width", w); s.setAttribute("height", h);
  function add(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    s.appendChild(e); return e;
  }
  var ymax = Math.max.apply(null, points.map(function (p) { return p[1]; })) || 1;
  xmax = xmax || points[points.length - 1][0] || 1;
  s.setAttribute("data-x0", L); s.setAttribute("data-px-per-s", pw / xmax);
  add("line", {x1: L, y1: T, x2: L, y2: T + ph, stroke: "#888"});
  add("line", {x1: L, y1: T + ph, x2: L + pw, y2: T + ph, stroke: "#888"});
  [0, 0.5, 1].forEach(function (f) {
    var y = T + ph - f * ph, x = L + f * pw;
    add("line", {x1: L - 4, y1: y, x2: L, y2: y, stroke: "#888"});
    add("text", {x: L - 6, y: y + 4, "text-anchor": "end"}, fy(f * ymax) || "0");
    add("line", {x1: x, y1: T + ph, x2: x, y2: T + ph + 4, stroke: "#888"});
    add("text", {x: x, y: T + ph + 16, "text-anchor": f === 0 ? "start" : f === 1 ? "end" : "middle"}, fx(f * xmax));
  });
  add("text", {x: L + pw / 2, y: h - 2, "text-anchor": "middle"}, xtitle);
  add("text", {x: 12, y: T + ph / 2, "text-anchor": "middle", transform: "rotate(-90 12 " + (T + ph / 2) + ")"}, ytitle);
  s.setAttribute("role", "img"); s.setAttribute("aria-label", ytitle + " over " + xtitle);
  var pts = points.map(function (p) {
    return (L + p[0] / xmax * pw).toFixed(1) + "," + (T + ph - p[1] / ymax * ph).toFixed(1);
  });
  add("polyline", {points: pts.join(" "), fill: "none", stroke: "#2a6f97", "stroke-width": "1.5"});
  return s;
}
// The time axis the memory plot and the timeline share: the same left edge, width and end
// (the later of the memory timeline's last point and the timeline's last bar).
var TIME_W = 880, TIME_L = 92, TIME_R = 12;
var TIME_END = Math.max(D.memory_timeline.length ? D.memory_timeline[D.memory_timeline.length - 1][0] : 0,
  D.timeline ? D.timeline.end_s : 0) || 1;
function seconds(v) { return v >= 0.1 ? v.toFixed(2) + " s" : ms(v) + " ms"; }
// Memory timeline
(function () {
  var m = D.memory_timeline, box = document.getElementById("memory");
  if (!m.length) { box.textContent = "no memory timeline (memory profiling off)"; return; }
  box.appendChild(chart(m, TIME_W, 150, bytes, function (v) { return v.toFixed(2) + " s"; },
    "memory held", "time since the start (s)", TIME_END));
  box.appendChild(el("div", "peak " + bytes(Math.max.apply(null, m.map(function (p) { return p[1]; }))) +
    " over " + m[m.length - 1][0].toFixed(2) + " s"));
  var k = D.peak;
  if (!k) return;
  if (!k.lines) { box.appendChild(el("div", "peak reached at " + k.t_s.toFixed(3) + " s, " + k.file + ":" + k.line, "peakat")); return; }
  box.appendChild(el("div", "peak of all processes together (" + bytes(D.summary.peak_bytes) + ") at " + k.t_s.toFixed(3) + " s, held by " +
    (k.lines.map(function (l) { return l[0] + ":" + l[1] + " " + bytes(l[2]) + " (" + l[3] + ")"; }).join(", ") || "no user line") +
    "; main process alone " + bytes(k.main[0]) + (k.main[1] === null ? "" : " at " + k.main[1].toFixed(3) + " s, " + k.main[2] + ":" + k.main[3]), "peakat"));
})();
// Timeline: each thread's region spans (depth = the path's segments, one row each) and the
// steps (alternating shades; warm-up and slow steps, as the summary finds them, marked)
(function () {
  var T = D.timeline;
  if (!T) return;
  document.getElementById("timeline-box").hidden = false;
  var box = document.getElementById("timeline"), L = TIME_L, pw = TIME_W - TIME_L - TIME_R;
  var scale = pw / TIME_END, rowH = 16, headH = 15;
  var s = document.createElementNS(SVG, "svg"), y = 2, colours = {}, order = [];
  var PALETTE = ["#f4a261", "#8ecae6", "#90be6d", "#c9a0dc", "#f9c74f", "#e5989b", "#83c5be", "#b5a48b"];
  function add(parent, tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    parent.appendChild(e); return e;
  }
  function colour(path) {
    if (!(path in colours)) { colours[path] = PALETTE[order.length % PALETTE.length]; order.push(path); }
    return colours[path];
  }
  // a bar from start to end (at least half a pixel wide), its title, and its label when it fits
  function bar(cls, start, end, top, fill, title, label) {
    var x = L + start * scale, w = Math.max((end - start) * scale, 0.5);
    var r = add(s, "rect", {"class": cls, x: x.toFixed(2), y: top, width: w.toFixed(2), height: rowH - 2});
    if (fill) r.setAttribute("fill", fill);
    add(r, "title", {}, title);
    if (label && w > 6.5 * label.length + 6) add(s, "text", {"class": "bar", x: (x + 3).toFixed(2), y: top + 11}, label);
    return r;
  }
  T.lanes.forEach(function (lane) {
    add(s, "text", {"class": "lane", x: 2, y: y + 11}, lane[0]);
    y += headH;
    var depth = 0;
    lane[1].forEach(function (b) { depth = Math.max(depth, b[1]); });
    lane[1].forEach(function (b) {
      var name = b[0].split("/").pop();
      bar("region", b[2], b[3], y + b[1] * rowH, colour(b[0]), b[0] + ": " + seconds(b[3] - b[2]) +
        " (from " + b[2].toFixed(3) + " s, " + lane[0] + ")", name).setAttribute("data-path", b[0]);
    });
    y += (depth + 1) * rowH + 4;
  });
  if (T.steps.length) {
    add(s, "text", {"class": "lane", x: 2, y: y + 11}, "steps");
    T.steps.forEach(function (b) {
      var cls = b[3] === 2 ? "step slow" : b[3] === 1 ? "step warmup" : b[0] % 2 ? "step" : "step alt";
      var r = bar(cls, b[1], b[1] + b[2], y, null, "step " + b[0] + ": " + seconds(b[2]) +
        (b[3] === 2 ? " (slow)" : b[3] === 1 ? " (warm-up)" : ""), String(b[0]));
      r.setAttribute("data-step", b[0]);
    });
    y += rowH + 4;
  }
  // the x axis, as the memory plot's: ticks at 0, half and the end
  add(s, "line", {x1: L, y1: y, x2: L + pw, y2: y, stroke: "#888"});
  [0, 0.5, 1].forEach(function (f) {
    var x = L + f * pw;
    add(s, "line", {x1: x, y1: 0, x2: x, y2: y + 4, stroke: f ? "#ddd" : "#888"});
    add(s, "text", {x: x, y: y + 16, "text-anchor": f === 0 ? "start" : f === 1 ? "end" : "middle"}, (f * TIME_END).toFixed(2) + " s");
  });
  add(s, "text", {x: L + pw / 2, y: y + 30, "text-anchor": "middle"}, "time since the start (s)");
  s.setAttribute("width", TIME_W); s.setAttribute("height", y + 34);
  s.setAttribute("data-x0", L); s.setAttribute("data-px-per-s", scale);
  s.setAttribute("role", "img"); s.setAttribute("aria-label", "regions and steps over time since the start");
  // the gridlines behind the bars
  Array.prototype.slice.call(s.querySelectorAll("line")).forEach(function (l) { if (l.getAttribute("stroke") === "#ddd") s.insertBefore(l, s.firstChild); });
  box.appendChild(s);
  var legend = document.getElementById("timeline-legend");
  order.slice(0, 24).forEach(function (path) {
    var k = el("span", null, "key"); k.style.background = colours[path];
    legend.appendChild(k); legend.appendChild(document.createTextNode(path));
  });
  if (T.steps.some(function (b) { return b[3]; })) {
    [["slow", "#e0533d", "slow step"], ["warmup", "#f2c57c", "warm-up step"]].forEach(function (k) {
      if (!T.steps.some(function (b) { return b[3] === (k[0] === "slow" ? 2 : 1); })) return;
      var sw = el("span", null, "key"); sw.style.background = k[1];
      legend.appendChild(sw); legend.appendChild(document.createTextNode(k[2]));
    });
  }
  if (T.regions_left_out) box.appendChild(el("div", T.regions_left_out + " region spans not drawn (the earliest " +
    T.lanes.reduce(function (a, lane) { return a + lane[1].length; }, 0) + " are)", "note"));
  if (T.steps_left_out) box.appendChild(el("div", T.steps_left_out + " steps not drawn (the first " +
    T.steps.length + " and the slow ones are)", "note"));
})();
// GPU (when profiled): devices, totals, top kernels with their launching lines
(function () {
  var g = D.gpu, box = document.getElementById("gpu");
  if (!g) return;
  box.appendChild(el("h2", "GPU"));
  g.devices.forEach(function (d) {
    box.appendChild(el("div", "GPU " + d[0] + " (" + d[1] + "): utilisation " + d[2].toFixed(0) +
      "% on average, idle in " + (100 * d[3]).toFixed(0) + "% of samples; memory peak " +
      bytes(d[4]) + " of " + bytes(d[5]) + " (device-wide, all processes)", "gpudevice"));
    box.appendChild(plot(d[6].map(function (p) { return p[1]; }), 300, 40, d[6].map(function (p) { return p[0]; })));
    box.appendChild(plot(d[7].map(function (p) { return p[1]; }), 300, 40, d[7].map(function (p) { return p[0]; })));
  });
  var s = g.summary;
  if (!s.kernel_tracing) { box.appendChild(el("div", "No per-line GPU time: kernel tracing (CUPTI) was off; see the warnings.")); return; }
  box.appendChild(el("div", "GPU time " + ms(s.gpu_s) + " ms in " + s.launches + " launches" +
    (s.unattributed_gpu_s ? " (" + ms(s.unattributed_gpu_s) + " ms not traced to a user line)" : "") +
    (s.alloc_peak_bytes ? "; device allocations peaked at " + bytes(s.alloc_peak_bytes) : ""), "gpusummary"));
  var t = el("table", null, "kernels"), h = el("tr");
  ["kernel", "calls", "GPU ms", "launched from"].forEach(function (c) { h.appendChild(el("th", c)); });
  t.appendChild(h);
  g.kernels.forEach(function (k) {
    var tr = el("tr", null, "kernel");
    tr.appendChild(el("td", k[0], "name")); tr.appendChild(el("td", k[1])); tr.appendChild(el("td", ms(k[2])));
    tr.appendChild(el("td", k[3].map(function (l) { return l[0] === null ? "(no user line)" : l[0] + ":" + l[1]; }).join(", "), "name"));
    t.appendChild(tr);
  });
  box.appendChild(t);
})();
// Native functions (--native): where native time went, over the whole program
(function () {
  var n = D.native, box = document.getElementById("native");
  if (!n || !n.length) return;
  box.appendChild(el("h2", "Native functions"));
  var t = el("table", null, "native"), h = el("tr");
  ["function", "library", "seconds", "under lines (or threads)"].forEach(function (c) { h.appendChild(el("th", c)); });
  t.appendChild(h);
  n.forEach(function (f) {
    var tr = el("tr", null, "nativefn");
    tr.appendChild(el("td", f[0], "name")); tr.appendChild(el("td", f[1] === null ? "(anonymous)" : f[1].split("/").pop(), "name"));
    tr.appendChild(el("td", f[2].toFixed(3)));
    tr.appendChild(el("td", f[3].map(function (l) { return l[1] === null ? l[0] : l[0].split("/").pop() + ":" + l[1]; }).join(", "), "name"));
    t.appendChild(tr);
  });
  box.appendChild(t);
})();
// Flame graph (icicle: the root on top). Idle threads (running under 5% of their time) are
// left out until "show idle threads" is ticked: their blocked time would dwarf the rest.
var KINDS = ["python", "native", "system", "cpu_wait"];
if (D.cpu_wait) document.getElementById("cpu-wait-key").hidden = false;
function kindOf(node) {
  var k = node[3] || [0, 0, 0, 0], best = 0;
  for (var i = 1; i < 4; i++) if (k[i] > k[best]) best = i;
  return KINDS[best];
}
function pruned(node, depth, showIdle) {
  if (depth === D.flame_thread_depth) return node[4] && !showIdle ? null : node;
  var kids = [], v = 0, k = [0, 0, 0, 0];
  node[2].forEach(function (c) {
    var p = pruned(c, depth + 1, showIdle);
    if (!p) return;
    kids.push(p); v += p[1];
    for (var i = 0; i < 4; i++) k[i] += (p[3] || [0, 0, 0, 0])[i] || 0;
  });
  if (!kids.length && depth > 0) return null;
  return [node[0], v, kids, k, 0];
}
var idleThreads = [];
(function count(node, depth) {
  if (depth === D.flame_thread_depth) { if (node[4]) idleThreads.push(node); return; }
  node[2].forEach(function (c) { count(c, depth + 1); });
})(D.flame, 0);
if (idleThreads.length) {
  var idleS = idleThreads.reduce(function (a, n) { return a + n[1]; }, 0);
  document.getElementById("idle-label").hidden = false;
  document.getElementById("idle-text").textContent = "show " + idleThreads.length + " idle thread" +
    (idleThreads.length === 1 ? "" : "s") + " (running under 5% of their time; " + idleS.toFixed(3) + " s, mostly blocked)";
}
var flameRoot = pruned(D.flame, 0, false), flameZoom = flameRoot;
document.getElementById("show-idle").onchange = function () {
  flameRoot = pruned(D.flame, 0, this.checked); flameZoom = flameRoot; drawFlame();
};
function drawFlame() {
  var box = document.getElementById("flame"), W = box.clientWidth || 1000, rowH = 18;
  var query = document.getElementById("search").value.toLowerCase();
  box.textContent = "";
  var depthMax = 0, frag = document.createDocumentFragment();
  function walk(node, x, w, depth) {
    if (w < 1) return;
    depthMax = Math.max(depthMax, depth);
    var d = el("div", node[0] + " " + node[1].toFixed(3) + " s", kindOf(node)), k = node[3] || [0, 0, 0, 0];
    d.title = node[0] + " (" + node[1].toFixed(3) + " s, " + (100 * node[1] / (flameRoot[1] || 1)).toFixed(1) +
      "%: Python " + k[0].toFixed(3) + " s, native " + k[1].toFixed(3) + " s, system " + k[2].toFixed(3) + " s" +
      (k[3] ? ", waiting for a CPU " + k[3].toFixed(3) + " s" : "") + ")";
    d.style.left = x + "px"; d.style.top = depth * rowH + "px"; d.style.width = w + "px";
    if (query && node[0].toLowerCase().indexOf(query) >= 0) d.className = "match";
    if (depth === 0 && idleThreads.length && !document.getElementById("show-idle").checked) d.textContent += " (idle threads hidden)";
    d.onclick = function () { flameZoom = node; drawFlame(); };
    frag.appendChild(d);
    var cx = x;
    node[2].forEach(function (c) { var cw = w * c[1] / (node[1] || 1); walk(c, cx, cw, depth + 1); cx += cw; });
  }
  walk(flameZoom, 0, W, 0);
  box.appendChild(frag);
  box.style.height = (depthMax + 1) * rowH + "px";
}
document.getElementById("search").oninput = drawFlame;
document.getElementById("reset").onclick = function () { flameZoom = flameRoot; drawFlame(); };
drawFlame();
// Functions, sortable; a click shows callers and callees
(function () {
  var cols = ["function", "file", "line", "Python", "native", "system", "inclusive", "alloc", "copy"];
  var fmt = [String, String, String, pct, pct, pct, pct, bytes, bytes];
  if (D.cpu_wait) { cols.push("CPU wait"); fmt.push(pct); }
  var table = document.getElementById("functions"), key = 6, desc = true;
  function edgesOf(f) {
    var box = el("div", null, "edges");
    D.edges.forEach(function (e) {
      if (e[2] === f[1] && e[3] === f[0]) box.appendChild(el("div", "called by " + e[1] + " (" + e[0] + "): " + pct(e[4])));
      if (e[0] === f[1] && e[1] === f[0]) box.appendChild(el("div", "calls " + e[3] + " (" + e[2] + "): " + pct(e[4])));
    });
    if (!box.firstChild) box.textContent = "no recorded callers or callees";
    return box;
  }
  function draw() {
    table.textContent = "";
    var head = el("tr");
    cols.forEach(function (c, i) {
      var th = el("th", c + (i === key ? (desc ? " \u25be" : " \u25b4") : ""));
      th.onclick = function () { desc = key === i ? !desc : true; key = i; draw(); };
      head.appendChild(th);
    });
    table.appendChild(head);
    var rows = D.functions.slice().sort(function (a, b) {
      var x = a[key], y = b[key], r = x < y ? -1 : x > y ? 1 : 0;
      return desc ? -r : r;
    });
    rows.forEach(function (f) {
      var tr = el("tr", null, "fn");
      f.forEach(function (v, i) { tr.appendChild(el("td", fmt[i](v), i < 2 ? "name" : "")); });
      tr.onclick = function () {
        var next = tr.nextSibling;
        if (next && next.className === "edgerow") { table.removeChild(next); return; }
        var r = el("tr", null, "edgerow"), td = el("td"); td.colSpan = cols.length;
        td.appendChild(edgesOf(f)); r.appendChild(td); table.insertBefore(r, next);
      };
      table.appendChild(tr);
    });
  }
  draw();
})();
// Threads
(function () {
  var t = document.getElementById("threads"), h = el("tr");
  ["thread", "Python s", "native s", "system s", "unattributed s", "CPU s"].concat(D.cpu_wait ? ["CPU wait s"] : []).forEach(function (c) { h.appendChild(el("th", c)); });
  t.appendChild(h);
  D.threads.forEach(function (r) {
    var tr = el("tr");
    r.forEach(function (v, i) { tr.appendChild(el("td", i ? Number(v).toFixed(3) : v, i ? "" : "name")); });
    t.appendChild(tr);
  });
})();
// Processes (a run with child processes; `heatline view --pid PID` shows one)
(function () {
  if (!D.processes || !D.processes.length) return;
  document.getElementById("processes-box").hidden = false;
  var t = document.getElementById("processes"), h = el("tr");
  ["pid", "parent", "role", "command line", "ended by", "Python s", "native s", "system s", "CPU s", "peak"].concat(D.cpu_wait ? ["CPU wait s"] : []).forEach(function (c) { h.appendChild(el("th", c)); });
  t.appendChild(h);
  D.processes.forEach(function (r) {
    var tr = el("tr");
    r.forEach(function (v, i) {
      var text = (i >= 5 && i <= 8) || i === 10 ? Number(v).toFixed(3) : i === 9 ? bytes(v) : String(v);
      tr.appendChild(el("td", text, i === 2 || i === 3 ? "name" : ""));
    });
    t.appendChild(tr);
  });
})();
// Regions (heatline.region, record_function, NVTX)
[["regions", ["region", "count", "wall s", "Python s", "native s", "system s", "CPU wait s"], 1],
 ["tasks", ["task", "runs", "wall s", "Python s", "native s", "system s", "alloc MiB"], 1]].forEach(function (spec) {
  var rows = D[spec[0]];
  if (!rows || !rows.length) return;
  document.getElementById(spec[0] + "-box").hidden = false;
  var t = document.getElementById(spec[0]), h = el("tr");
  spec[1].forEach(function (c) { h.appendChild(el("th", c)); });
  t.appendChild(h);
  rows.forEach(function (r) {
    var tr = el("tr");
    r.forEach(function (v, i) {
      var text = i > spec[2] ? Number(v).toFixed(3) : String(v);
      tr.appendChild(el("td", text, i < spec[2] ? "name" : ""));
    });
    t.appendChild(tr);
  });
});
// Modules (torch): a tree, each module under its caller, indented by depth; a click on a
// module with modules under it folds them away (and back)
(function () {
  var rows = D.modules;
  if (!rows || !rows.length) return;
  document.getElementById("modules-box").hidden = false;
  var t = document.getElementById("modules"), h = el("tr");
  var alloc = rows.some(function (r) { return r[10] !== null && r[10] !== undefined; });
  ["module", "class", "calls", "wall s", "self s", "Python s", "native s", "system s", "CPU wait s"].concat(alloc ? ["alloc"] : []).forEach(function (c) { h.appendChild(el("th", c)); });
  t.appendChild(h);
  var trs = [], stack = [];
  rows.forEach(function (r, i) {
    var depth = r[11], parent = depth ? stack[depth - 1] : null;
    stack[depth] = r; stack.length = depth + 1;
    var name = r[0] === "" ? "(" + r[2] + ")" : parent && parent[0] && r[0].indexOf(parent[0] + ".") === 0 ? r[0].slice(parent[0].length + 1) : r[0];
    var tr = el("tr", null, "module"), td = el("td", null, "name"), more = i + 1 < rows.length && rows[i + 1][11] > depth;
    tr.setAttribute("data-depth", depth); tr.setAttribute("data-path", r[2] + ":" + r[0]);
    td.style.paddingLeft = (6 + 16 * depth) + "px"; td.title = r[2] + (r[0] ? ": " + r[0] : " (the root)");
    td.appendChild(el("span", more ? "\u25be" : "", "toggle")); td.appendChild(document.createTextNode(name));
    tr.appendChild(td); tr.appendChild(el("td", r[1], "name")); tr.appendChild(el("td", r[3]));
    for (var k = 4; k < 10; k++) tr.appendChild(el("td", Number(r[k]).toFixed(3)));
    if (alloc) tr.appendChild(el("td", bytes(r[10])));
    if (more) { tr.className = "module parent"; tr.onclick = function () { fold(i); }; }
    trs.push(tr); t.appendChild(tr);
  });
  // folding hides every row under i; unfolding shows them again but those under a folded row
  function fold(i) {
    var depth = rows[i][11], folded = !trs[i].classList.contains("folded");
    trs[i].classList.toggle("folded", folded);
    trs[i].firstChild.firstChild.textContent = folded ? "\u25b8" : "\u25be";
    for (var j = i + 1; j < rows.length && rows[j][11] > depth; j++) {
      trs[j].hidden = folded;
      if (!folded && trs[j].classList.contains("folded")) {
        var d = rows[j][11];
        while (j + 1 < rows.length && rows[j + 1][11] > d) j++;
      }
    }
  }
})();
// Leaks
(function () {
  var box = document.getElementById("leaks");
  if (!D.leaks.length) { box.textContent = "no likely leaks"; return; }
  var t = el("table"), h = el("tr");
  ["file", "line", "likelihood", "growth/s", "growth", "source"].forEach(function (c) { h.appendChild(el("th", c)); });
  t.appendChild(h);
  D.leaks.forEach(function (l) {
    var tr = el("tr");
    tr.appendChild(el("td", l[0], "name")); tr.appendChild(el("td", l[1]));
    tr.appendChild(el("td", (100 * l[3]).toFixed(0) + "%")); tr.appendChild(el("td", bytes(l[4])));
    tr.appendChild(el("td", bytes(l[5]))); tr.appendChild(el("td", l[2], "src"));
    t.appendChild(tr);
  });
  box.appendChild(t);
})();
// Annotated source; runs of 4+ lines with nothing to show fold into one clickable row
(function () {
  var box = document.getElementById("files"), HOT = D.hot_pct;
  var cols = ["line", "Python", "native", "system", "alloc", "growth", "copy", "memory", "source"];
  if (D.gpu) cols.splice(8, 0, "GPU ms", "launches", "GPU copy", "GPU alloc");
  if (D.cpu_wait) cols.splice(4, 0, "CPU wait");
  D.files.forEach(function (f) {
    box.appendChild(el("h3", f.path + " (" + pct(f.pct) + ")"));
    var t = el("table", null, "source"), h = el("tr");
    cols.forEach(function (c) { h.appendChild(el("th", c)); });
    t.appendChild(h);
    var frag = document.createDocumentFragment();
    function row(l) {
      var tr = el("tr", null, "line");
      if (lineTime(l) >= HOT) tr.className = "line hot";
      tr.appendChild(el("td", l[0], "ln"));
      tr.appendChild(el("td", pct(l[2]))); tr.appendChild(el("td", pct(l[3]))); tr.appendChild(el("td", pct(l[4])));
      if (D.cpu_wait) tr.appendChild(el("td", pct(l[13])));
      tr.appendChild(el("td", bytes(l[5]))); tr.appendChild(el("td", bytes(l[6]))); tr.appendChild(el("td", bytes(l[7])));
      var sp = el("td"); if (l[8].length > 1) sp.appendChild(plot(l[8], 60, 14)); tr.appendChild(sp);
      if (D.gpu) {
        tr.appendChild(el("td", l[9] ? ms(l[9]) : "", "gpu")); tr.appendChild(el("td", l[10] || ""));
        tr.appendChild(el("td", bytes(l[11]))); tr.appendChild(el("td", bytes(l[12])));
      }
      tr.appendChild(el("td", l[1], "src"));
      return tr;
    }
    function idle(l) { return !(l[2] || l[3] || l[4] || l[13] || l[5] || l[7] || l[10] || l[12]); }
    var lines = f.lines, i = 0;
    while (i < lines.length) {
      var j = i;
      while (j < lines.length && idle(lines[j])) j++;
      if (j - i >= 4) {
        (function (run) {
          var g = el("tr", null, "gap"), td = el("td", "\u25b8 " + run.length + " lines not executed (lines " +
            run[0][0] + "-" + run[run.length - 1][0] + "), click to show");
          td.colSpan = cols.length; g.appendChild(td);
          g.onclick = function () {
            var after = g.nextSibling;
            run.forEach(function (l) { t.insertBefore(row(l), after); });
            t.removeChild(g);
          };
          frag.appendChild(g);
        })(lines.slice(i, j));
        i = j;
      } else {
        for (; i < Math.max(j, i + 1) && i < lines.length; i++) frag.appendChild(row(lines[i]));
      }
    }
    t.appendChild(frag);
    box.appendChild(t);
  });
})();
document.body.setAttribute("data-rendered", "1");
</script></body></html>
"""

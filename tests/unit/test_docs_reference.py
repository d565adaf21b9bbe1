"""docs/ is reference: outside the generated blocks (bench/render.py's, between an HTML comment
`NAME:begin` and its `NAME:end`), no page carries a commit hash, a run date, an issue number or
a path of one machine; and every relative link of docs/*.md and README.md names a file that
exists. The history those pages leave out is in bench/results/NOTES.md and the commits."""

import re
from pathlib import Path

import pytest

# Nothing checked here depends on the CPython version: runs on the main CPython and under ASan,
# not on every version (Makefile, suite-3.X).
pytestmark = pytest.mark.interpreter_independent

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md"))

GENERATED = re.compile(r"<!-- (\w+):begin -->.*?<!-- \1:end -->", re.DOTALL)

# A commit hash: 7-40 hex digits, at least one digit and one letter, as a word of its own (not
# part of a longer name, a path or a 0x constant).
HASH = re.compile(r"(?<![\w./-])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w-])")
DATE = re.compile(
    r"\b(?:19|20)\d\d-[01]\d-[0-3]\d\b"
    r"|\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.? [0-3]?\d\b"
)
ISSUE = re.compile(r"\bissues? #?\d+", re.IGNORECASE)
# One machine's paths: the work tree, scratch directories. IPython's own kernel files
# (/tmp/ipykernel_PID/...) are where IPython puts them on every machine.
MACHINE_PATH = re.compile(r"(?<![\w.])/work/|(?<![\w.])/tmp/(?!ipykernel_PID/)")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _outside_generated(text):
    return GENERATED.sub("", text)


def _findings(text):
    found = []
    for line in _outside_generated(text).splitlines():
        for kind, pattern in (
            ("hash", HASH),
            ("date", DATE),
            ("issue", ISSUE),
            ("machine path", MACHINE_PATH),
        ):
            found += [
                f"{kind} {m.group(0)!r}: {line.strip()[:100]}" for m in pattern.finditer(line)
            ]
    return found


def test_the_patterns_find_what_they_are_for_and_nothing_else():
    assert _findings("heatline at commit 38c80bd measured it") == [
        "hash '38c80bd': heatline at commit 38c80bd measured it"
    ]
    assert _findings("(a5daf8b; the fix)")[0].startswith("hash 'a5daf8b'")
    assert [f.split(":")[0] for f in _findings("run of 2026-11-28 and of Nov 30")] == [
        "date '2026-11-28'",
        "date 'Nov 30'",
    ]
    assert _findings("(issue 24, continued)")[0].startswith("issue 'issue 24'")
    assert _findings("see /work/main/src and /tmp/heatline-ci/x")[0].startswith(
        "machine path '/work/'"
    )
    assert len(_findings("see /work/main/src and /tmp/heatline-ci/x")) == 2
    legitimate = (
        "a flag of 0x7fffffff, the type deadbeef, libscipy_openblas64_-32a4b2a6, "
        "5 ms on 2 CPUs, 1234567 samples, /tmp/ipykernel_PID/HASH.py, "
        "the May release, issues of a profiler"
    )
    assert _findings(legitimate) == []
    block = "<!-- bench:begin -->\nRun of 2026-11-28 at `38c80bdde1`\n<!-- bench:end -->"
    assert _findings("before\n" + block + "\nafter") == []


def test_the_docs_exist_and_the_generated_blocks_are_found():
    names = {p.name for p in DOCS}
    assert {"overhead.md", "accuracy.md", "design.md", "engine-api.md"} <= names
    overhead = (ROOT / "docs" / "overhead.md").read_text(encoding="utf-8")
    markers = {m.group(1) for m in GENERATED.finditer(overhead)}
    assert {"bench", "workloads", "pool", "children", "versions", "builtin"} <= markers
    # the blocks do hold run dates and hashes: what this test leaves to them
    assert DATE.search(overhead) and not DATE.search(_outside_generated(overhead))


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_a_doc_has_no_history_outside_its_generated_blocks(path):
    assert _findings(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("path", DOCS + [ROOT / "README.md"], ids=lambda p: p.name)
def test_every_relative_link_names_an_existing_file(path):
    text = path.read_text(encoding="utf-8")
    targets = [
        t
        for t in LINK.findall(text)
        if not re.match(r"[a-z][a-z0-9+.-]*:", t) and not t.startswith("#")
    ]
    missing = [t for t in targets if not (path.parent / t.split("#")[0]).exists()]
    assert missing == []


def test_the_design_map_links_every_design_document():
    design = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    linked = set(LINK.findall(design))
    parts = {p.name for p in DOCS if p.name.startswith("design-")}
    assert parts and parts <= linked

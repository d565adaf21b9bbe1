"""Command-line splitting and the cheap import of the heatline package."""

import subprocess
import sys

import pytest

import heatline
from heatline.cli.common import split_argv


@pytest.mark.parametrize(
    ("argv", "options", "program"),
    [
        (["train.py", "--epochs", "3", "-o", "x"], [], ["train.py", "--epochs", "3", "-o", "x"]),
        (["-o", "p.json", "-q", "app.py", "-q"], ["-o", "p.json", "-q"], ["app.py", "-q"]),
        (["--outfile=p.json", "app.py"], ["--outfile=p.json"], ["app.py"]),
        (["-op.json", "app.py"], ["-op.json"], ["app.py"]),
        (["-qo", "p.json", "app.py"], ["-qo", "p.json"], ["app.py"]),
        (
            ["--sampling-interval", "0.1", "app.py"],
            ["--sampling-interval", "0.1"],
            ["app.py"],
        ),
        (["-q", "-m", "pkg.mod", "-o", "x"], ["-q"], ["-m", "pkg.mod", "-o", "x"]),
        (["-mpkg", "a"], [], ["-m", "pkg", "a"]),
        (["-qm", "pkg"], ["-q"], ["-m", "pkg"]),
        (["--", "-odd-name.py", "a"], [], ["-odd-name.py", "a"]),
        (["-q"], ["-q"], []),
        (["-m"], ["-m"], []),  # argparse then reports the missing module name
    ],
)
def test_split_argv_stops_at_the_program(argv, options, program):
    assert split_argv(argv) == (options, program)


def test_importing_heatline_loads_neither_the_engine_nor_rich():
    code = (
        "import heatline, sys; print(sorted(m for m in ('heatline._native', 'rich') "
        "if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_pause_and_resume_do_nothing_without_a_running_profile():
    heatline.pause()
    heatline.resume()


def _option_actions():
    from heatline.cli.run import parser as _run_parser

    return [action for action in _run_parser()._actions if action.option_strings]


def test_split_argv_knows_every_option_of_the_parser():
    # split_argv must skip exactly the values the parser takes, or the program's command line
    # would start at an option's value (or swallow the script).
    for action in _option_actions():
        if action.dest in ("help", "version", "module"):
            continue
        takes_value = action.nargs is None and action.const is None
        for flag in action.option_strings:
            argv = [flag, "VALUE", "app.py"] if takes_value else [flag, "app.py"]
            assert split_argv(argv) == (argv[:-1], ["app.py"]), flag


def test_parser_defaults_are_the_options_defaults():
    from heatline.cli.run import parser as _run_parser
    from heatline.options import DEFAULT_MEMORY_SAMPLING_WINDOW_BYTES as DEFAULT_WINDOW
    from heatline.options import DEFAULT_SAMPLING_INTERVAL_S, Options

    parsed = vars(_run_parser().parse_args([]))
    del parsed["module"]
    assert parsed == vars(Options())
    arguments = Options().session_arguments()
    assert arguments["sampling_interval_s"] == DEFAULT_SAMPLING_INTERVAL_S
    assert arguments["memory_sampling_window_bytes"] == DEFAULT_WINDOW
    assert Options(cpu_only=True).session_arguments()["memory_sampling_window_bytes"] == 0


def test_the_usage_names_every_subcommand():
    # `heatline --help` is where a user learns the commands: each one the dispatcher knows is
    # spelled in its usage lines.
    from heatline.cli import SUBCOMMANDS
    from heatline.cli.run import USAGE

    named = {line.split()[1] for line in USAGE.splitlines()[1:] if line.split()[0] == "heatline"}
    assert set(SUBCOMMANDS) <= named, sorted(set(SUBCOMMANDS) - named)


def _imported(*args):
    """The modules python imported running args (its own record of them, -X importtime)."""
    result = subprocess.run([sys.executable, "-X", "importtime", *args],
                            capture_output=True, text=True, check=True)
    return {line.rpartition("|")[2].strip() for line in result.stderr.splitlines()
            if line.startswith("import time:")}


@pytest.mark.parametrize("mode", [(), ("--cpu-only",)])
def test_a_run_imports_neither_typing_nor_shutil_nor_json_nor_re(tmp_path, mode):
    # Every run pays for what its own path imports (bench/fixed_cost.py; docs/overhead.md):
    # typing only served annotations, and shutil (with bz2, lzma...) only the help's width,
    # which argparse asked for at every option added; json, which imports re and compiles six
    # patterns (31 M instructions), only wrote the profile, which its C encoder does alone
    # (data/io.py), and re one pattern of the report's. What the run imported is read from
    # python's own record of its imports, so the check cannot miss one. The standard modules
    # heatline does need may import them on some versions (3.9's importlib.util imports
    # typing, through runpy): those are not heatline's to leave out.
    (tmp_path / "empty.py").write_text("pass\n")
    imported = _imported("-m", "heatline", "-q", *mode, "-o", str(tmp_path / "p.json"),
                         str(tmp_path / "empty.py"))
    assert "heatline.engine.session" in imported, sorted(imported)
    needed = _imported("-c", "import runpy, sysconfig")
    extra = imported & ({"typing", "shutil", "json", "re"} - needed)
    assert not extra, sorted(extra)


# A value each option accepts, by its metavar (a new metavar needs one here).
PLAIN_SAMPLES = {"FILE": "out.json", "PATTERNS": "a.py,b", "SECONDS": "0.02", "BYTES": "1024",
                 "PERCENT": "5", "N": "3", "FORMAT": "html", "HOST:PORT": "127.0.0.1:0",
                 "A:B": "4:6"}


def _plain_command_lines():
    from heatline.options import RUN_OPTIONS

    lines, everything = [[]], []
    for option in RUN_OPTIONS:
        for flag in option.all_flags:
            if option.takes_value:
                sample = PLAIN_SAMPLES[option.metavar]
                lines.append([flag, sample])
                if flag.startswith("--"):
                    lines.append([f"{flag}={sample}"])
                everything += [flag, sample]
            else:
                lines.append([flag])
                everything.append(flag)
    lines += [["--html"], ["--json"], ["--json", "--format", "terminal"], ["--html", "--json"],
              ["--profile-only", "a", "--profile-only=b"], ["--native", "--no-native"],
              ["--no-gpu", "--gpu"], ["-q", "-q", "-o", "a.json", "-o", "b.html"],
              ["--sampling-interval", "0.5", "--sampling-interval", "0.25"], everything]
    return lines


@pytest.mark.parametrize("option_args", _plain_command_lines(), ids=" ".join)
def test_a_plain_command_line_is_read_without_argparse_as_argparse_reads_it(option_args):
    """cli/run.py reads the run's options itself when each is spelled plainly (a run's start
    then neither imports argparse nor builds its parser of some 60 options: 19 M
    instructions): the very values argparse gives, for every spelling of every option."""
    from heatline.cli import run

    plain = run.parse_plainly(option_args)
    assert plain is not None
    assert plain == vars(run.parser().parse_args(option_args))


@pytest.mark.parametrize("option_args", [
    ["-qo", "x.json"], ["-ox.json"], ["--cpu"], ["--quiet=yes"], ["--format", "-q"], ["-o"],
    ["--format=nonsense"], ["--memory-sampling-window", "0"], ["-h"], ["--help"],
    ["--version"], ["--bogus"], ["--no-cpu-only"], ["-o=x.json"], ["--cpu-percent-threshold"],
], ids=" ".join)
def test_any_other_command_line_is_left_to_argparse(option_args):
    """Combined or abbreviated options, a value that starts with '-' or that its option
    refuses, help, version and misspellings: argparse reads those (and reports errors)."""
    from heatline.cli import run

    assert run.parse_plainly(option_args) is None


def test_a_plain_run_does_not_import_argparse(tmp_path):
    (tmp_path / "empty.py").write_text("pass\n")
    imported = _imported("-m", "heatline", "-q", "--cpu-only", "-o", str(tmp_path / "p.json"),
                         str(tmp_path / "empty.py"))
    assert "heatline.engine.session" in imported and "argparse" not in imported
    # A misspelt option: argparse reads the command line, and says what is wrong in one line.
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "heatline", "--cpu",
                           str(tmp_path / "empty.py")], capture_output=True, text=True)
    assert done.returncode == 2
    assert "heatline: error: unrecognized arguments: --cpu" in done.stderr
    assert "| argparse\n" in done.stderr

"""proofs_check.cli.common: one error / exit-code helper for every command-line program.

Every parser refuses abbreviated options (a prefix of a real flag is a usage error, exit 2), and
bad usage or input is one line ``PROG: error: ...`` on stderr, never a traceback.
"""
from __future__ import annotations

import argparse
import os
import re
import tempfile
from pathlib import Path
from typing import Callable, NoReturn

import pytest

from heuristics.gpu.snapshot import SnapshotError
from heuristics.gpu.trace import TraceError
from proofs_check.cli import admit, plots, ringsim, sifopt, simulate, verify
from proofs_check.cli.common import (
    EXIT_INCONCLUSIVE,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    EXIT_VIOLATED,
    CliParser,
    Exit,
    UsageError,
    make_parser,
    positive,
    run,
    usage_on,
    version_text,
)
from proofs_check.core.engine import EngineError


def test_exit_codes_are_the_specs():
    assert (EXIT_OK, EXIT_VIOLATED, EXIT_USAGE, EXIT_INCONCLUSIVE) == (0, 1, 2, 3)


def test_usage_error_names_file_line_and_field():
    assert str(UsageError("9 outside 1..8", file="t.csv", line=3, field="g")) == "t.csv:3: field 'g': 9 outside 1..8"
    assert str(UsageError("must be > 0", field="nodes")) == "field 'nodes': must be > 0"
    assert str(UsageError("--eta: bad")) == "--eta: bad"


@pytest.mark.parametrize("error, text", [
    (UsageError("--x: bad"), "--x: bad"),
    (FileNotFoundError(2, "No such file or directory", "/no/trace.csv"), "/no/trace.csv: No such file or directory"),
    (TraceError("t.csv", 4, "g", "not a number"), "t.csv:4: field 'g': not a number"),
    (SnapshotError("s.json", "nodes", "missing"), "s.json: field 'nodes': missing"),
    (EngineError("cannot reach tcp://h:8786\nsecond line"), "cannot reach tcp://h:8786 second line"),
])
def test_run_turns_input_errors_into_one_line_and_exit_2(capsys, error, text):
    def body() -> int:
        raise error

    assert run("prog", body) == EXIT_USAGE
    assert capsys.readouterr().err == f"prog: error: {text}\n"


def test_run_passes_exit_codes_and_a_bug_is_exit_70_with_its_traceback_in_a_file(capsys, tmp_path, monkeypatch):
    assert run("prog", lambda: 3) == 3

    def bug() -> int:
        raise ZeroDivisionError("a bug is not a usage error")

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert run("prog", bug) == EXIT_INTERNAL == Exit.INTERNAL == 70
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("prog: internal error (a bug, not your input): "
                                                         "ZeroDivisionError: a bug is not a usage error; ")
    assert "please file a bug report" in err
    (report,) = tmp_path.glob("prog-crash-*.txt")
    assert f"the traceback is in {report}" in err
    text = report.read_text()
    assert text.startswith("prog placement-oracles ") and "Traceback (most recent call last)" in text
    assert "ZeroDivisionError: a bug is not a usage error" in text
    assert run("prog", bug, usage_errors=(ZeroDivisionError,)) == EXIT_USAGE


def test_a_crash_never_exits_1_even_in_a_subprocess(tmp_path) -> None:
    """A bug deep inside a command (here: the solver step replaced by a division by zero) is exit 70 and
    one line on stderr, not Python's traceback and exit 1 (1 is a finding)."""
    import subprocess
    import sys
    code = ("import sys\n"
            "from proofs_check.cli import sifopt\n"
            "sifopt.solve = lambda *a: 1 / 0\n"
            "sys.exit(sifopt.main(['--nodes', '2', '--counts', '1=1']))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "TMPDIR": str(tmp_path)})
    assert proc.returncode == 70 and proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and "sifopt: internal error" in proc.stderr
    assert list(tmp_path.glob("sifopt-crash-*.txt"))


def test_only_a_programs_own_process_ends_without_teardown() -> None:
    """``run`` ends the program's own process once the report is written: its output flushed,
    its exit code kept, without the interpreter's teardown (freeing every memo entry one by one;
    an exit handler shows it: it never runs). Under a test runner or a library user it returns."""
    import subprocess
    import sys
    assert run("verify", lambda: EXIT_OK) == EXIT_OK
    code = ("import atexit, sys\n"
            "sys.argv[0] = 'verify'\n"
            "from proofs_check.cli.common import run\n"
            "atexit.register(lambda: print('teardown', file=sys.stderr))\n"
            "def body():\n"
            "    print('the report', end='')\n"
            "    return 3\n"
            "run('verify', body)\n"
            "print('returned')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, "the report", "")


def test_the_exit_code_table_in_docs_is_the_code():
    """docs/cli.md has the one table of exit codes; it lists exactly :class:`Exit`."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text()
    rows = re.findall(r"^\| (\d+) \| `(\w+)` \|", text, flags=re.M)
    assert {(int(code), name) for code, name in rows} == {(e.value, e.name) for e in Exit}


COMMANDS = {"verify": verify.main, "sifopt": sifopt.main, "admit": admit.main, "simulate": simulate.main,
            "simulate-plot": plots.main, "ringsim": ringsim.main}


@pytest.mark.parametrize("prog", sorted(COMMANDS))
def test_every_command_has_version(capsys, prog):
    with pytest.raises(SystemExit) as stop:
        COMMANDS[prog](["--version"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out == version_text(prog) + "\n"
    assert out.startswith(f"{prog} placement-oracles ") and "Python 3." in out


class _Parser(BaseException):
    """Carries the parser a command builds out of its main (a BaseException: run() lets it through)."""


def parser_of(main: Callable[[list[str]], int], monkeypatch: pytest.MonkeyPatch) -> argparse.ArgumentParser:
    def grab(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> NoReturn:
        raise _Parser(self)

    monkeypatch.setattr(CliParser, "parse_args", grab)
    with pytest.raises(_Parser) as got:
        main([])
    parser = got.value.args[0]
    assert isinstance(parser, argparse.ArgumentParser)
    return parser


@pytest.mark.parametrize("prog", sorted(COMMANDS))
def test_every_flag_says_what_it_is_and_its_default(monkeypatch, prog):
    """Every argument has help text, and every flag that takes a value names its default ("default
    X", "default: none", "no default")."""
    missing = []
    for action in parser_of(COMMANDS[prog], monkeypatch)._actions:
        if isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            continue
        text = action.help or ""
        takes_value = bool(action.option_strings) and action.nargs != 0
        if not text or (takes_value and "default" not in text):
            missing.append("/".join(action.option_strings) or action.dest)
    assert not missing, f"{prog}: flags without help or without their default: {missing}"


@pytest.mark.parametrize("prog", ["admit", "sifopt"])
def test_admit_and_sifopt_help_documents_the_snapshot_format(capsys, prog):
    with pytest.raises(SystemExit):
        COMMANDS[prog](["--help"])
    out = capsys.readouterr().out
    assert '"placement": [[{"job": 1, "g": 4}' in out and "capacity" in out and "Exit codes" in out


def test_usage_on_converts_only_the_named_errors():
    with pytest.raises(UsageError, match="^--window: empty window$"):
        with usage_on(ValueError, prefix="--window"):
            raise ValueError("empty window")
    with pytest.raises(KeyError):
        with usage_on(ValueError):
            raise KeyError("x")


def test_make_parser_refuses_abbreviations_and_errors_raise():
    p = make_parser("prog", "a test")
    p.add_argument("--depth", type=int)
    assert p.parse_args(["--depth", "3"]).depth == 3
    with pytest.raises(UsageError, match="unrecognized arguments: --dept"):
        p.parse_args(["--dept", "3"])
    with pytest.raises(TypeError):
        make_parser("prog", allow_abbrev=True)


def test_positive_type_names_the_option():
    p = make_parser("prog")
    p.add_argument("--time-limit", type=positive(float))
    assert p.parse_args(["--time-limit", "0.5"]).time_limit == 0.5
    for bad in ("0", "-1", "x"):
        with pytest.raises(UsageError, match="argument --time-limit: "):
            p.parse_args(["--time-limit", bad])


# A prefix of a real option of each program (argparse would otherwise accept it silently), and a
# mistyped one.
ABBREVIATED = [
    (sifopt.main, ["--nodes", "2", "--counts", "1=1", "--time", "5"], "--time"),  # --time-limit
    (sifopt.main, ["--nodes", "2", "--count", "1=1"], "--count"),  # --counts
    (admit.main, ["snap.json", "--repack", "--targ", "1"], "--targ"),  # --target
    (simulate.main, ["--sched", "best-fit"], "--sched"),  # --schedulers
    (simulate.main, ["--eta-x", "0.9"], "--eta-x"),
    (simulate.main, ["--migration", "1"], "--migration"),  # --migration-cost
    (ringsim.main, ["--work", "B"], "--work"),  # --workloads
    (ringsim.main, ["--no-plot"], "--no-plot"),  # --no-plots
    (plots.main, ["runs", "--t", "5"], "--t"),  # --t0 / --t1
]


@pytest.mark.parametrize("main, argv, flag", ABBREVIATED)
def test_abbreviated_or_mistyped_option_is_exit_2(capsys, tmp_path, main, argv, flag):
    assert main(argv) == EXIT_USAGE
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert "error: unrecognized arguments" in err and flag in err


def test_a_closed_pipe_is_no_traceback() -> None:
    """`verify … | head`: the reader has gone; the program ends quietly with 128 + SIGPIPE."""
    import subprocess
    import sys
    code = ("import os, sys\n"
            "from proofs_check.cli.common import run\n"
            "r, w = os.pipe(); os.close(r); os.dup2(w, 1)\n"
            "sys.exit(run('prog', lambda: print('x' * 100000) or 0))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 141 and proc.stderr == ""

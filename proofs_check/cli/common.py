"""What every command-line program shares: exit codes, usage errors, the parser, the error wrapper.

Exit codes (:class:`Exit`, the same for every command; the one table is docs/cli.md): 0 ok /
holds / answered, 1 a finding (violated, impossible, or a run that aborted because the scheduler
failed), 2 bad usage or input, 3 inconclusive (a budget or solver limit was hit, memory ran out, or vacuous),
70 internal error (a bug of this program: one line on stderr asking for a bug report and naming
the file the traceback was written to — never exit 1, which is a finding), 130 interrupted,
141 the output pipe was closed.

Bad usage or input is always one line on stderr, ``PROG: error: <file>:<line>: field 'F':
<problem>`` (file, line and field where they apply), and exit 2 — never a traceback. A program
raises :class:`UsageError` (or lets a loader's error through) and wraps its body in :func:`run`::

    def main(argv: Sequence[str] | None = None) -> int:
        return run("admit", lambda: _main(argv))

An output file (a report, CSV, PNG) is written with :func:`write_output` (or
:func:`replace_output` for a writer that takes a path, e.g. ``savefig``): atomically, through a
temporary file in the same directory renamed over the destination, so a failed write leaves the
old file or none, never a 0-byte or truncated one. An output that cannot be written (an
``OSError``: a full disk, a directory in its place, ``/dev/full``) is :class:`OutputError`: one line
``PROG: error: cannot write <file>: <OS error>`` and exit 2 (the contract has no code of its own for
it; 2 is distinct from every verdict: 0, 1 and 3).

Parsers come from :func:`make_parser`, which refuses abbreviated options (``--dept`` for
``--depth`` is an error, not a silent match), turns argparse's own errors into UsageError and gives
every command ``--version`` (:func:`version_text`: the program, the distribution's version and the
Python it runs on).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback
from contextlib import contextmanager
from enum import IntEnum
from pathlib import Path
from typing import Any, Callable, Iterator, NoReturn, TypeVar

from heuristics.gpu.snapshot import SnapshotError
from heuristics.gpu.trace import TraceError
from heuristics.limits import LimitError
from proofs_check.cli import PROGRAM
from proofs_check.core import interrupt
from proofs_check.core.atomic import replace_atomic, write_atomic
from proofs_check.core.engine import EngineError
from proofs_check.core.trace import RecordError
from proofs_check.core.verdict import EXIT_INCONCLUSIVE, EXIT_OK, EXIT_USAGE, EXIT_VIOLATED

T = TypeVar("T", int, float)

__all__ = ["EXIT_INCONCLUSIVE", "EXIT_OK", "EXIT_OUTPUT", "EXIT_USAGE", "EXIT_VIOLATED", "OutputError", "UsageError",
           "make_parser", "output_dir", "positive", "replace_output", "run", "usage_on", "write_output"]

DISTRIBUTION = "placement-oracles"
__all__ += ["EXIT_INTERNAL", "Exit", "version_text"]


class Exit(IntEnum):
    """The exit codes of every command (docs/cli.md has the one table; tests/test_cli_common.py
    checks that it lists exactly these)."""

    OK = EXIT_OK  # holds / answered / every run completed
    FINDING = EXIT_VIOLATED  # violated, impossible, or a run aborted because the scheduler failed
    USAGE = EXIT_USAGE  # bad usage or input, or an output that cannot be written
    INCONCLUSIVE = EXIT_INCONCLUSIVE  # a budget or solver limit was hit first, or vacuous
    INTERNAL = 70  # a bug of the program (sysexits' EX_SOFTWARE); the traceback is in a file
    INTERRUPTED = 130  # 128 + SIGINT: stopped by Ctrl-C
    BROKEN_PIPE = 141  # 128 + SIGPIPE: the reader of the output went away


EXIT_INTERNAL = Exit.INTERNAL.value

# Errors that mean "bad usage or input" in every program: exit 2, one line.
INPUT_ERRORS: tuple[type[Exception], ...] = (SnapshotError, TraceError, RecordError, EngineError, LimitError)
# Path problems (a missing trace, an output folder that is a file): named by the path.
EXIT_BROKEN_PIPE = Exit.BROKEN_PIPE.value
PATH_ERRORS: tuple[type[OSError], ...] = (FileNotFoundError, IsADirectoryError, NotADirectoryError,
                                          PermissionError)


class UsageError(Exception):
    """Bad usage or input. The message is one line; ``file``, ``line`` and ``field`` (each where
    it applies) are put in front: ``file:line: field 'F': message``."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        self.file, self.line, self.field = file, line, field
        where = [] if file is None else [file if line is None else f"{file}:{line}"]
        if field is not None:
            where.append(f"field '{field}'")
        super().__init__(": ".join([*where, message]))


EXIT_OUTPUT = EXIT_USAGE  # an output that cannot be written (OutputError)


class OutputError(UsageError):
    """An output file cannot be written: ``cannot write <file>: <OS error>``, one line, exit 2."""

    @staticmethod
    def of(path: str | os.PathLike[str], error: OSError) -> "OutputError":
        return OutputError(f"cannot write {os.fspath(path)}: {error.strerror or one_line(error)}")


def write_output(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write an output file atomically; an ``OSError`` becomes :class:`OutputError` naming ``path``."""
    try:
        write_atomic(path, data)
    except OSError as e:
        raise OutputError.of(path, e) from None


def replace_output(path: str | os.PathLike[str], fill: Callable[[Path], None]) -> None:
    """Like :func:`write_output` for a writer that takes a path: ``fill(tmp)`` writes the new content
    to a temporary path with ``path``'s suffix (``fig.savefig(tmp)`` infers the format from it)."""
    try:
        replace_atomic(path, fill)
    except OSError as e:
        raise OutputError.of(path, e) from None


def output_dir(path: str | os.PathLike[str]) -> Path:
    """Create the output folder ``path`` (and its parents) if missing; a file in its place or an
    ``OSError`` is :class:`OutputError` naming it."""
    out = Path(path)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise OutputError(f"cannot write {os.fspath(path)}: not a directory") from None
    except OSError as e:
        raise OutputError.of(path, e) from None
    return out


class CliParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors raise UsageError (one line, exit 2 through :func:`run`)
    instead of printing the usage block and exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def version_text(prog: str) -> str:
    """``PROG placement-oracles X.Y.Z (Python 3.11.4)``: what ``--version`` prints and a crash
    report starts with (``unknown version`` when run from a source tree that is not installed)."""
    import platform  # here, not at the top, as metadata: see ``_Version``
    from importlib import metadata
    try:
        version = metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        version = "unknown version (not installed)"
    return f"{prog} {DISTRIBUTION} {version} (Python {platform.python_version()})"


def make_parser(prog: str, description: str | None = None, **kwargs: Any) -> CliParser:
    """A parser for ``prog`` with ``--version``; abbreviations of long options are always refused
    (``allow_abbrev=False``; passing ``allow_abbrev`` is a TypeError)."""
    parser = CliParser(prog=prog, description=description, allow_abbrev=False, **kwargs)
    parser.add_argument("--version", action=_Version, nargs=0, default=argparse.SUPPRESS,
                        help="print the program's name, the placement-oracles version and the Python version, "
                             "and exit 0")
    return parser


class _Version(argparse.Action):
    """``--version``: :func:`version_text`, looked up when asked for (argparse's own action takes
    the text when the parser is built: the installed distribution's metadata, about 25 ms of every
    run's start-up, most of it importing ``importlib.metadata``)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> NoReturn:
        print(version_text(parser.prog))
        parser.exit()


def positive(kind: Callable[[str], T]) -> Callable[[str], T]:
    """An argparse ``type`` for a number > 0 (``type=positive(float)``): anything else is a usage
    error naming the option."""
    def parse(text: str) -> T:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{text!r} must be > 0")
        if value == float("inf"):
            raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
        return value
    return parse


@contextmanager
def usage_on(*kinds: type[Exception], prefix: str | None = None) -> Iterator[None]:
    """Inside the block, turn ``kinds`` (e.g. a library's ValueError on bad input) into
    UsageError with the same message, after ``prefix`` (an option name) when given."""
    try:
        yield
    except kinds as e:
        raise UsageError(str(e) if prefix is None else f"{prefix}: {e}") from None


def one_line(error: BaseException) -> str:
    """The error's message on one line (a path error named by its path)."""
    if isinstance(error, OSError) and error.filename is not None:
        text = f"{error.filename}: {error.strerror or error}"
    else:
        text = str(error)
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def crash_report(prog: str, error: BaseException, argv: list[str] | None = None) -> Path | None:
    """Write the traceback of an internal error, with the version and the command line, to a new
    file in the temporary folder (``$TMPDIR``); its path, or None when it cannot be written."""
    text = "".join([f"{version_text(prog)}\n",
                    f"command: {' '.join(sys.argv if argv is None else argv)}\n",
                    f"time: {time.strftime('%Y-%m-%d %H:%M:%S %z')}\n\n",
                    *traceback.format_exception(error)])
    try:
        fd, name = tempfile.mkstemp(prefix=f"{prog}-crash-", suffix=".txt")
        with os.fdopen(fd, "w") as f:
            f.write(text)
    except OSError:
        return None
    return Path(name)


def internal_error(prog: str, error: BaseException) -> int:
    """One line on stderr: the error, a request for a bug report and where the traceback went;
    exit :attr:`Exit.INTERNAL` (never 1, which is a finding)."""
    path = crash_report(prog, error)
    details = f"the traceback is in {path}" if path is not None else "the traceback follows"
    print(f"{prog}: internal error (a bug, not your input): {type(error).__name__}: {one_line(error)}; "
          f"please file a bug report with the command line; {details}", file=sys.stderr)
    if path is None:
        traceback.print_exception(error, file=sys.stderr)
    return EXIT_INTERNAL


def run(prog: str, body: Callable[[], int], usage_errors: tuple[type[Exception], ...] = ()) -> int:
    """``body()``'s exit code; on bad usage or input (UsageError, a path error, a snapshot or
    trace loader's error, EngineError, or one of ``usage_errors``) print ``PROG: error: ...``
    as one line on stderr and return 2; out of memory, one line and 3 (inconclusive); on any other exception (a bug) print one line asking for a
    bug report, write the traceback to a file (:func:`crash_report`) and return 70."""
    caught: tuple[type[Exception], ...] = (UsageError, *PATH_ERRORS, *INPUT_ERRORS, *usage_errors)
    try:
        code = body()
        interrupt.ignore_from_now()  # the report is written: a late signal cannot change its exit code
        if prog == PROGRAM:
            # The process ends here, its output flushed (inside the try: a reader that went away is
            # the BrokenPipeError below), without the interpreter's teardown: a search leaves
            # millions of objects in its memos (canonical forms, packed states), which the
            # teardown traverses and frees one by one (after a pool5 run: 0.4-0.5 s, 26 ms with
            # the heap frozen first; now 0.3 ms, ``strace -tt -e trace=write,exit_group``). Every
            # output file is written and closed by then (atomically, ``write_output``) and no
            # program registers exit handlers; mypy ends the same way (``mypy.util.hard_exit``).
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        return code
    except BrokenPipeError:  # the reader went away (`verify … | head`): no traceback, and the
        # shell's code for a write to a closed pipe (128 + SIGPIPE), since the verdict was not all written
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except caught as e:
        print(f"{prog}: error: {one_line(e)}", file=sys.stderr)
        return EXIT_USAGE
    except MemoryError as e:  # outside the parts that keep their report (a search level, an armed block)
        detail = f" ({one_line(e)})" if str(e) else ""
        print(f"{prog}: out of memory{detail}; the run is inconclusive (lower the sizes or give it more memory)",
              file=sys.stderr)
        return EXIT_INCONCLUSIVE
    except Exception as e:  # a bug: never a bare traceback and exit 1 (1 is a finding)
        return internal_error(prog, e)

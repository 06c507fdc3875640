"""The command-line programs. Imported first when a program starts (its console script imports
``proofs_check.cli.<prog>``), so a program's early signal handler is installed here, before the
heavy imports: SIGINT/SIGTERM before the run began end it at once with one line and exit 130
(``proofs_check.core.interrupt.install_early``). Only in a program's own process — never when
the package is imported by a test runner or a library user."""
from __future__ import annotations

import os
import sys

PROGRAMS = ("admit", "ringsim", "verify", "sifopt", "simulate", "simulate-plot")


def _program() -> str | None:
    """The program this process runs (its console script, ``python -m proofs_check.cli.X`` or
    ``python proofs_check/cli/X.py``), or None."""
    name = os.path.basename(sys.argv[0]) if sys.argv else ""
    if name in PROGRAMS:
        return name
    orig = list(getattr(sys, "orig_argv", []))
    if "-m" in orig[:-1]:
        module = orig[orig.index("-m") + 1]
        prog = module.rsplit(".", 1)[-1]
        return prog if module.startswith(__name__ + ".") and prog in PROGRAMS else None
    if name.endswith(".py") and os.path.basename(os.path.dirname(sys.argv[0])) == "cli":
        return name.removesuffix(".py") if name.removesuffix(".py") in PROGRAMS else None
    return None


PROGRAM = _program()  # the program this process runs (None under a test runner or a library user)
if PROGRAM is not None:
    from proofs_check.core.interrupt import install_early

    install_early(PROGRAM)

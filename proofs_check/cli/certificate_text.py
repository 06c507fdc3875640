"""How ``sifopt`` and ``admit`` name a certificate in words: what it proves and which method did.

A certificate (``oracle.result.Certificate``) carries a status and a solver tag (``dp``,
``cp-sat``, ``highs (pulp)``, ``bruteforce``, ``one-move search``) that are terse by design (they
are also the ``--json`` fields). The text output spells them out::

    [proven optimal by exact dynamic programming over the instance counts, 0.001 s]
    [not proven: time limit hit, by the CP-SAT solver (OR-Tools 9.15.6755), 10.002 s]
"""
from __future__ import annotations

from typing import Any

from oracle.result import Certificate, Status

__all__ = ["STATUS_WORDS", "certificate_text", "method_text"]

STATUS_WORDS: dict[Status, str] = {
    Status.OPTIMAL: "proven optimal",
    Status.INFEASIBLE: "proven infeasible",
    Status.FEASIBLE: "not proven: time limit hit, best found so far",
    Status.UNKNOWN: "not proven: time limit hit, nothing found",
}


def method_text(solver: str, version: str) -> str:
    """The method behind a solver tag, in words (an unknown tag is printed with its version)."""
    words = {
        "dp": "exact dynamic programming over the instance counts",
        "cp-sat": f"the CP-SAT solver (OR-Tools {version})",
        "highs (pulp)": f"the HiGHS MILP solver through PuLP ({version})",
        "highs": f"the HiGHS MILP solver ({version})",
        "bruteforce": "exhaustive search",
        "one-move search": "an exhaustive search over single moves (no solver needed)",
    }
    return words.get(solver, f"{solver} {version}")


def certificate_text(cert: Certificate[Any, Any]) -> str:
    """``[proven optimal by <method>, 0.123 s]``."""
    status = STATUS_WORDS.get(Status(cert.status), str(cert.status))
    by = " by " if cert.status in (Status.OPTIMAL, Status.INFEASIBLE) else ", by "
    return f"[{status}{by}{method_text(cert.solver, cert.solver_version)}, {cert.wall_time:.3f} s]"

"""The one result vocabulary of every exact oracle (SPEC, "Lessons from the best peers"; issue 12,
item 4): a certificate, not a bare number.

* :class:`Status` — what a solve proved, in four words (a subset of Pyomo's solution statuses):
  ``optimal`` (the incumbent is proven optimal), ``feasible`` (an incumbent, not proven optimal: a
  limit was hit), ``infeasible`` (proven: no solution), ``unknown`` (a limit was hit before any
  incumbent was found, or the model was rejected).
* :class:`Certificate` — status, incumbent objective, proven bound, witness, solver name and
  version, wall time. Generic over the objective's type ``V`` (an int for Φ★, a float for a tour,
  a lexicographic tuple for the rack subset) and over the oracle's own witness type ``W``, so a
  caller can re-check the answer instead of trusting it.
* One mapping per solver from its own status to :class:`Status`: :func:`cpsat_status` (OR-Tools
  CP-SAT) and :func:`highs_status` (HiGHS, also when PuLP runs it). The exact enumerations —
  Held–Karp, the brute forces, the Φ★ dynamic programme, a branch and bound run to its end —
  prove what they return and state ``OPTIMAL`` / ``INFEASIBLE`` themselves.
* :class:`Unproven` — raised where an exact value is needed but the solve did not prove one.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

V = TypeVar("V")
W = TypeVar("W")


class Status(enum.StrEnum):
    """What a solve proved. A ``StrEnum``: each member equals, formats and serialises to JSON as
    its lower-case value, so reports written with the old string statuses are unchanged."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    UNKNOWN = "unknown"


# The statuses that carry an incumbent (and only these): checked by Certificate.__post_init__.
_WITH_INCUMBENT = frozenset({Status.OPTIMAL, Status.FEASIBLE})


@dataclass(frozen=True)
class Certificate(Generic[V, W]):
    """Outcome of one exact solve (all oracles minimise).

    ``objective`` is the incumbent's value: set exactly when ``status`` is ``optimal`` or
    ``feasible``. ``bound`` is a proven lower bound on the optimum (equal to ``objective`` when
    optimal; None when nothing was proven). ``witness`` is the oracle's evidence for the
    incumbent, in the oracle's own type (e.g. a packing as pattern → multiplicity for Φ★, a ring
    order for a tour); each oracle documents what it holds when there is no incumbent.
    ``solver`` / ``solver_version`` name the method that produced it, ``wall_time`` is seconds.
    """

    status: Status
    objective: V | None
    bound: V | None
    witness: W
    solver: str
    solver_version: str
    wall_time: float

    def __post_init__(self) -> None:
        # One vocabulary: a bare string status, or an incumbent under the wrong status, is a bug
        # in the oracle that built this certificate, caught where it is made.
        if not isinstance(self.status, Status):
            raise TypeError(f"status {self.status!r} is not an oracle.result.Status")
        if (self.objective is not None) != (self.status in _WITH_INCUMBENT):
            raise ValueError(f"a {self.status} certificate {'needs' if self.status in _WITH_INCUMBENT else 'has no'} "
                             f"incumbent objective (got {self.objective!r})")

    @property
    def is_optimal(self) -> bool:
        """The incumbent is proven optimal."""
        return self.status is Status.OPTIMAL

    @property
    def is_proven(self) -> bool:
        """The solve settled the question: proven optimal or proven infeasible (not a limit)."""
        return self.status is Status.OPTIMAL or self.status is Status.INFEASIBLE

    def proven_value(self, what: str = "value") -> V | None:
        """The proven optimum; None when proven infeasible; raises :class:`Unproven` (naming
        ``what``) when the solve stopped at a limit, so an incumbent is never taken for the optimum."""
        if self.status is Status.OPTIMAL:
            return self.objective
        if self.status is Status.INFEASIBLE:
            return None
        raise Unproven(f"{what} unproven", self)


class Unproven(RuntimeError):
    """An exact value was needed but the solve did not prove one (status ``feasible`` or
    ``unknown``: it stopped at its limit). Whoever needed the value must report it as not known
    — a claim inconclusive, a figure left out — never substitute the incumbent.

    ``certificate`` is the solve's certificate when the raiser has one; its solver, wall time,
    incumbent and bound are then appended to ``message``.
    """

    def __init__(self, message: str, certificate: Certificate[Any, Any] | None = None) -> None:
        if certificate is not None:
            message += (f": {certificate.solver} stopped with status {certificate.status} after "
                        f"{certificate.wall_time:.3f}s (incumbent {certificate.objective}, "
                        f"proven bound {certificate.bound})")
        super().__init__(message)
        self.certificate = certificate


# CP-SAT's CpSolverStatus by name (``CpSolver.status_name``), so the table needs no OR-Tools import
# and holds across OR-Tools versions (an int before 9.12, an enum since). MODEL_INVALID proves
# nothing about the instance: it maps to UNKNOWN like a limit hit before any solution.
_CPSAT = {
    "OPTIMAL": Status.OPTIMAL,
    "FEASIBLE": Status.FEASIBLE,
    "INFEASIBLE": Status.INFEASIBLE,
    "MODEL_INVALID": Status.UNKNOWN,
    "UNKNOWN": Status.UNKNOWN,
}


def cpsat_status(name: str) -> Status:
    """OR-Tools CP-SAT's solve status (its name, ``CpSolver.status_name(status)``) as a Status."""
    try:
        return _CPSAT[name]
    except KeyError:
        raise ValueError(f"unknown CP-SAT status {name!r}; known: {', '.join(_CPSAT)}") from None


def highs_status(model_status: str, has_incumbent: bool) -> Status:
    """HiGHS's model status (its name, e.g. ``HighsModelStatus.kOptimal.name``) as a Status.

    ``kOptimal`` is proven optimal (within the gap the caller set); ``kInfeasible`` and
    ``kUnboundedOrInfeasible`` are infeasible (every oracle objective is bounded below by 0, so
    HiGHS's "unbounded or infeasible" can only be infeasible). Any other status is a limit or an
    error: ``feasible`` when HiGHS holds a primal solution (``has_incumbent``), else ``unknown``.
    PuLP's own ``LpStatus`` is not read: it reports a time limit with an incumbent as "Optimal".
    """
    if model_status == "kOptimal":
        return Status.OPTIMAL
    if model_status in ("kInfeasible", "kUnboundedOrInfeasible"):
        return Status.INFEASIBLE
    return Status.FEASIBLE if has_incumbent else Status.UNKNOWN

"""Solving a PuLP integer model on HiGHS and reading back what HiGHS proved.

Shared by the two HiGHS second opinions (``oracle.gpu.phi_star.solve_milp``,
``oracle.gpu.repack_ilp.solve_milp``): the same solver options (one thread, an absolute gap below
1 — both objectives are integral, so that gap proves optimality, while the default relative gap
1e-4 would accept a non-optimal answer once the objective is in the 10⁴s), the same optional MIP
start, and the same reading of HiGHS's model and solution status. What the numbers mean for each
model (which bound, what a rounded incumbent is worth) stays with the model.
"""
from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, Iterator, Mapping, NamedTuple

from oracle import stopping
from oracle.result import Status, highs_status

SOLVER_NAME = "highs (pulp)"


class HighsResult(NamedTuple):
    """HiGHS's verdict on one solve.

    ``status`` is HiGHS's model status mapped by :func:`oracle.result.highs_status`.
    ``has_incumbent`` says whether the variables hold a feasible solution; ``objective`` and
    ``dual_bound`` are HiGHS's floats, unrounded."""

    status: Status
    has_incumbent: bool
    objective: float
    dual_bound: float
    solver: str
    solver_version: str
    wall_time: float


def integer_variable(prob: Any, name: str, ub: int) -> Any:
    """A non-negative integer variable of ``prob`` with upper bound ``ub``.

    PuLP ≥ 3 attaches variables to the model (a bare ``LpVariable`` is deprecated there and warns
    on every call); PuLP 2.x has no ``add_variable``.
    """
    import pulp

    new_var = getattr(prob, "add_variable", pulp.LpVariable)
    return new_var(name, 0, ub, cat="Integer")


@contextmanager
def c_stdout_silenced() -> Iterator[None]:
    """HiGHS prints its banner on the C-level stdout once per process, which would corrupt a
    CLI's JSON output; point fd 1 at /dev/null while it runs."""
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError):
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    try:
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


@lru_cache(maxsize=None)
def _highs_with_start() -> Any:
    """PuLP's HiGHS interface plus a MIP start (PuLP's HiGHS class takes none). The greedy start
    cut the median Φ★ solve at N = 16384 from ~80 ms to ~7 ms in our measurements."""
    import highspy
    import pulp

    class HighsWithStart(pulp.HiGHS):
        def __init__(self, start: Mapping[str, int], **kw: Any) -> None:
            super().__init__(**kw)
            self.start = start

        def callSolver(self, lp: Any) -> None:
            hm = lp.solverModel
            hm.HandleUserInterrupt = True  # HiGHS polls cancelSolve's flag (oracle.stopping)
            with stopping.running(hm.cancelSolve) as stopped:
                if stopped:
                    hm.setOptionValue("time_limit", 0.0)
                self._solve(lp)

        def _solve(self, lp: Any) -> None:
            if self.start:
                values = [0.0] * lp.solverModel.getNumCol()
                for var in lp.variables():
                    values[var.index] = float(self.start.get(var.name, 0))
                sol = highspy.HighsSolution()
                sol.col_value = values
                sol.value_valid = True
                lp.solverModel.setSolution(sol)
            super().callSolver(lp)

    return HighsWithStart


def solve(prob: Any, time_limit: float, started: float, start: Mapping[str, int] | None = None) -> HighsResult:
    """Solve the PuLP problem ``prob`` on HiGHS (MIP start ``start``: variable name → value, if
    any); ``started`` is the ``time.perf_counter()`` the wall time counts from."""
    import pulp

    backend = _highs_with_start()(start or {}, msg=False, timeLimit=float(time_limit), threads=1,
                                  gapRel=0.0, gapAbs=0.999)
    with c_stdout_silenced():
        prob.solve(backend)
    wall = time.perf_counter() - started
    hm = prob.solverModel
    info = hm.getInfo()
    has_incumbent = info.primal_solution_status == 2  # kSolutionStatusFeasible
    return HighsResult(highs_status(hm.getModelStatus().name, has_incumbent), has_incumbent,
                       info.objective_function_value, info.mip_dual_bound, SOLVER_NAME,
                       f"HiGHS {hm.version()} / PuLP {pulp.__version__}", wall)

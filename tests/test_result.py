"""The one result vocabulary of the exact oracles (oracle/result.py): each solver's status mapped
once, a frozen certificate generic over its witness, and Unproven wherever a value is needed but
not proven — in particular CP-SAT's FEASIBLE is 'feasible' everywhere and never passes for Φ★."""
from __future__ import annotations

import dataclasses
import json
import typing

import pytest

import oracle.gpu.min_migration as min_migration_mod
import oracle.gpu.phi_star as phi_star_mod
from heuristics.gpu.cluster import Job
from heuristics.gpu.sifopt import SIFOpt
from oracle.gpu.min_migration import min_migration_repack, min_migrations_to_admit
from oracle.gpu.patterns import PackingWitness
from oracle.gpu.phi_star import (
    clear_cache,
    min_nodes_bruteforce,
    phi_star,
    phi_star_bruteforce,
    phi_star_cpsat,
    phi_star_milp,
    phi_star_value,
)
from oracle.rack.rack_subset import lex_optimal_subset
from oracle.rack.ring_tour import cp_sat_tour
from oracle.result import Certificate, Status, Unproven, cpsat_status, highs_status

# Beyond the DP's state limit (11^4 sub-multisets > 4096), so phi_star goes to CP-SAT.
LARGE_COUNTS = (10, 10, 10, 10, 0, 0, 0, 0)


def _cert(status: Status, objective: int | None = None, bound: int | None = None) -> Certificate[int, PackingWitness]:
    return Certificate(status, objective, bound, (), "test", "0", 1.5)


# -------------------------------------------------------------------------- Status and mappings


def test_status_is_a_str_enum_that_serialises_as_before():
    assert [s.value for s in Status] == ["optimal", "feasible", "infeasible", "unknown"]
    assert Status.OPTIMAL == "optimal" and f"{Status.FEASIBLE}" == "feasible" and str(Status.UNKNOWN) == "unknown"
    assert json.dumps({"status": Status.INFEASIBLE}) == '{"status": "infeasible"}'


@pytest.mark.parametrize("name, status", [
    ("OPTIMAL", Status.OPTIMAL), ("FEASIBLE", Status.FEASIBLE), ("INFEASIBLE", Status.INFEASIBLE),
    ("MODEL_INVALID", Status.UNKNOWN), ("UNKNOWN", Status.UNKNOWN)])
def test_cpsat_mapping(name, status):
    assert cpsat_status(name) is status


def test_cpsat_mapping_covers_every_status_of_the_installed_or_tools():
    from ortools.sat import cp_model_pb2
    from ortools.sat.python import cp_model

    assert {cpsat_status(n) for n in cp_model_pb2.CpSolverStatus.keys()} == set(Status)
    solver = cp_model.CpSolver()
    assert cpsat_status(solver.status_name(cp_model.FEASIBLE)) is Status.FEASIBLE
    with pytest.raises(ValueError, match="CP-SAT status"):
        cpsat_status("SOLVED")


@pytest.mark.parametrize("name, incumbent, status", [
    ("kOptimal", True, Status.OPTIMAL), ("kInfeasible", False, Status.INFEASIBLE),
    ("kUnboundedOrInfeasible", False, Status.INFEASIBLE), ("kTimeLimit", True, Status.FEASIBLE),
    ("kTimeLimit", False, Status.UNKNOWN), ("kIterationLimit", True, Status.FEASIBLE),
    ("kSolveError", False, Status.UNKNOWN)])
def test_highs_mapping(name, incumbent, status):
    assert highs_status(name, incumbent) is status


def test_highs_mapping_covers_every_model_status_of_the_installed_highspy():
    import highspy

    for name in highspy.HighsModelStatus.__members__:
        for incumbent in (False, True):
            assert isinstance(highs_status(name, incumbent), Status)


def test_every_exact_method_speaks_the_one_vocabulary():
    """Real solves: the pattern ILP on CP-SAT and on HiGHS, the brute force and the DP prove
    'optimal' or 'infeasible'; so do the tour and the rack-subset oracles."""
    fits, too_many = ((0, 3, 2, 0, 0, 0, 0, 0), 2), ((0, 3, 2, 0, 0, 0, 0, 0), 1)
    for method in (phi_star_cpsat, phi_star_milp, phi_star_bruteforce, phi_star):
        assert method(*fits).status is Status.OPTIMAL and method(*fits).objective == 1
        assert method(*too_many).status is Status.INFEASIBLE
    assert min_nodes_bruteforce((0, 0, 0, 0, 2, 0, 0, 0)).status is Status.OPTIMAL
    tour = cp_sat_tour([[0, 1, 2], [1, 0, 1], [2, 1, 0]])
    assert tour.status is Status.OPTIMAL and tour.objective == 4 and sorted(tour.witness) == [0, 1, 2]
    dist = [[0, 1], [1, 0]]
    assert lex_optimal_subset([2, 2], 3, dist, [0.0, 1.0, 2.0]).status is Status.OPTIMAL
    assert lex_optimal_subset([2, 2], 5, dist, [0.0, 1.0, 2.0]).status is Status.INFEASIBLE
    assert min_migrations_to_admit([[(1, 4)], [(2, 4)]], 8, 8, 1).status is Status.OPTIMAL


# -------------------------------------------------------------------------- the certificate


def test_certificate_is_frozen_and_generic():
    cert = Certificate[float, tuple[int, ...]](Status.OPTIMAL, 4.0, 4.0, (0, 2, 1), "cp-sat", "9", 0.1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cert.status = Status.FEASIBLE  # type: ignore[misc]
    assert typing.get_args(Certificate[float, tuple[int, ...]]) == (float, tuple[int, ...])
    assert cert.is_optimal and cert.is_proven and cert.proven_value() == 4.0


def test_certificate_refuses_a_foreign_or_inconsistent_status():
    with pytest.raises(TypeError, match="Status"):
        Certificate("optimal", 1, 1, (), "x", "0", 0.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs"):
        _cert(Status.FEASIBLE)  # an unproven incumbent must be there
    with pytest.raises(ValueError, match="has no"):
        _cert(Status.UNKNOWN, 3)  # an incumbent is 'feasible', not 'unknown'


@pytest.mark.parametrize("status, objective", [(Status.FEASIBLE, 3), (Status.UNKNOWN, None)])
def test_an_unproven_value_raises(status, objective):
    cert = _cert(status, objective, 1)
    assert not cert.is_proven and not cert.is_optimal
    with pytest.raises(Unproven, match=f"Φ★ unproven: test stopped with status {status}") as e:
        cert.proven_value("Φ★")
    assert e.value.certificate is cert
    assert _cert(Status.INFEASIBLE).proven_value() is None and _cert(Status.INFEASIBLE).is_proven


def test_unproven_without_a_certificate_keeps_its_message():
    e = Unproven("Φ★ solve for counts (1,), N=1 hit its limit")
    assert str(e) == "Φ★ solve for counts (1,), N=1 hit its limit" and e.certificate is None


# -------------------------------------------------------------------------- callers: FEASIBLE is never Φ★


@pytest.fixture
def phi_star_stops(monkeypatch):
    """CP-SAT stopped by its limit with an incumbent on the Φ★ pattern model (not memoised)."""
    clear_cache()

    def stopped(m, time_limit):
        return Certificate(Status.FEASIBLE, 3, 1, (), "cp-sat", "test", time_limit)

    monkeypatch.setattr(phi_star_mod, "solve_cpsat", stopped)
    yield
    clear_cache()


def test_phi_star_keeps_feasible_and_does_not_memoise_it(phi_star_stops):
    cert = phi_star(LARGE_COUNTS, 40)
    assert (cert.status, cert.objective, cert.bound) == (Status.FEASIBLE, 3, 1)
    assert phi_star(LARGE_COUNTS, 40) is not cert  # solved again: a later call may prove it
    with pytest.raises(Unproven, match="Φ★ unproven") as e:
        phi_star_value(LARGE_COUNTS, 40)
    assert e.value.certificate is not None and e.value.certificate.status is Status.FEASIBLE


def test_min_migration_without_a_proven_phi_star_is_unknown(monkeypatch):
    """A repack aims at Φ★: an unproven Φ★ gives no target, so no incumbent and status unknown
    (not 'feasible'); an admission does not need Φ★ and is still solved exactly."""
    monkeypatch.setattr(min_migration_mod, "phi_star",
                        lambda counts, n, capacity, time_limit: _cert(Status.FEASIBLE, 1, 0))
    current = [[(1, 4)], [(2, 2)], []]
    repack = min_migration_repack(current, 8)
    assert (repack.status, repack.objective, repack.witness.target_partial) == (Status.UNKNOWN, None, None)
    admit = min_migrations_to_admit(current, 8, 8, 1)
    assert (admit.status, admit.objective) == (Status.OPTIMAL, 0)


def test_sifopt_counts_a_feasible_phi_star_as_unknown(monkeypatch):
    """SIFOpt needs a proven Φ★ to repack: a feasible one is counted in phi_unknown and the job
    is placed by best-fit, exactly as an unknown one was."""
    import heuristics.gpu.sifopt as sifopt_mod

    monkeypatch.setattr(sifopt_mod, "phi_star", lambda counts, n, capacity, time_limit: _cert(Status.FEASIBLE, 0, 0))
    p = SIFOpt(2)
    assert p.arrive(Job(1, 4, 1)).ok
    assert p.stats.phi_unknown == 1 and p.stats.exact == p.stats.trivial == 0

"""One conformance suite over every registered flat scheduler (as networkx runs one suite over
every flow function): a clone is independent, every abstraction a scheduler declares passes its
check on this run (or is not declared), and ``policy.valid`` holds at small bounds."""
from __future__ import annotations

import copy

import pytest

from heuristics.gpu.cluster import Job
from heuristics.gpu.registry import builtin_policy_names, make_policy
from proofs_check.gpu.abstraction import Declared, checked
from proofs_check.gpu.flat_claims import ALL_G
from proofs_check.gpu.live import snapshot
from proofs_check.gpu.live_model import LiveModel
from proofs_check.gpu.policy_model import EventBounds
from proofs_check.testing import check_policy

# hier-compass is hierarchical (NVLink domains of panels) and needs an option: its claims run on
# its own model (test_hier_policy.py).
FLAT = [n for n in builtin_policy_names() if n != "hier-compass"]
# The repacking schedulers solve an ILP per event: smaller bounds keep the suite fast.
SLOW = {"sifopt", "fft", "drr"}


@pytest.mark.parametrize("name", FLAT)
def test_a_clone_is_independent(name: str) -> None:
    pol = make_policy(name, 3)
    assert pol.arrive(Job(0, 2, 2)).ok
    before = snapshot(pol)
    for other in (copy.deepcopy(pol), getattr(pol, "clone", lambda: copy.deepcopy(pol))()):
        assert other.arrive(Job(1, 1, 3)).ok and other.depart(0).ok
        assert snapshot(pol) == before and pol.placement() != other.placement()


@pytest.mark.parametrize("name", FLAT)
def test_declared_abstractions_pass_their_checks(name: str) -> None:
    n = 2 if name in SLOW else 3
    model = LiveModel(lambda k: make_policy(name, k), n, EventBounds(ALL_G, 3, 2))
    c = checked(model, 4)
    assert c.refused == (), c.refused
    assert c.trust.view == c.declared.view and c.trust.symmetry == c.declared.symmetry
    assert c.declared == Declared.of(make_policy(name, 1))


@pytest.mark.parametrize("name", FLAT)
def test_policy_valid_at_small_bounds(name: str) -> None:
    depth = 3 if name in SLOW else 4
    (r,) = check_policy(name, claims=["policy.valid"], max_nodes=2, depth=depth, max_w=2)
    assert r.verdict.value == "holds"

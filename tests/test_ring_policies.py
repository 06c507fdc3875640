"""RingStitch and the five baselines: only valid allocations, the paper's decision rules."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from heuristics.rack.racks import FragmentationPenalty, RackCluster, placement_violations
from heuristics.rack.ring_baselines import RING_POLICIES, DemandBound, make_ring_policy
from heuristics.rack.ring_order import EXACT_LIMIT, nearest_neighbour_ring
from heuristics.rack.ringstitch import (GENERATOR_NAMES, GENERATORS, RingStitch, best_fit, fragment_first,
                                        local_neighbour_first, stitch_candidates)

CLUSTERS = [RackCluster.torus((2, 2, 2), capacity=8), RackCluster.torus((3, 3, 2), capacity=16),
            RackCluster.torus((2, 3, 3), capacity=8, n_racks=13)]


@st.composite
def situations(draw):
    cluster = draw(st.sampled_from(CLUSTERS))
    residual = draw(st.lists(st.integers(0, cluster.capacity), min_size=cluster.n, max_size=cluster.n))
    demand = draw(st.integers(1, cluster.total_chips))
    return cluster, residual, demand


@pytest.mark.parametrize("name", sorted(RING_POLICIES))
@settings(max_examples=150, deadline=None)
@given(case=situations(), penalty=st.sampled_from(["linear", "inverse"]))
def test_every_policy_places_validly_or_defers(name, case, penalty):
    cluster, residual, demand = case
    pen = FragmentationPenalty(penalty)
    policy = make_ring_policy(name, penalty=pen)
    p = policy.place(cluster, residual, demand)
    fits_locally = max(residual) >= demand
    if p is None:
        assert not fits_locally  # every policy places a job that fits one rack
        if name in ("ringstitch", "capacity-only", "network-unaware-best-fit", "ring-exact-choice"):
            assert sum(residual) < demand  # stitching policies defer only on aggregate shortage
        if name == "full-rack":
            assert residual.count(cluster.capacity) * cluster.capacity < demand
        return
    assert placement_violations(cluster, residual, demand, p, pen.table(cluster.capacity)) == []
    if fits_locally:
        assert len(p.alloc) == 1
    if name == "full-rack" and len(p.alloc) > 1:
        assert all(residual[r] == cluster.capacity for r in p.racks)
    if name.startswith("local"):
        assert len(p.alloc) == 1


@settings(max_examples=150, deadline=None)
@given(case=situations())
def test_ringstitch_picks_the_lexicographic_best_candidate(case):
    cluster, residual, demand = case
    rs = RingStitch()
    p = rs.place(cluster, residual, demand)
    if p is None or p.source == "local":
        return
    cands = rs.candidates(cluster, residual, demand)
    assert len(cands) <= len(GENERATORS)
    assert len({frozenset(c.racks) for c in cands}) == len(cands)  # deduplicated
    assert p == min(cands, key=lambda c: c.key)
    # fragment-first: every rack but the one with the largest residual is consumed completely
    used = sorted(p.alloc, key=lambda rc: (residual[rc[0]], rc[0]))
    assert all(c == residual[r] for r, c in used[:-1])


def _literal_best_fit(residual, demand, eligible):
    """§IV-B best-fit as a plain loop: the smallest residual ≥ the remaining need if any, else the
    largest (ties: smaller id)."""
    left = sorted(eligible, key=lambda r: (residual[r], r))
    chosen, need = [], demand
    while need > 0 and left:
        fits = [r for r in left if residual[r] >= need]
        pick = fits[0] if fits else max(left, key=lambda r: (residual[r], -r))
        chosen.append(pick)
        left.remove(pick)
        need -= residual[pick]
    return tuple(chosen) if need <= 0 else None


def _literal_neighbour_first(residual, demand, eligible, dist):
    left = sorted(eligible, key=lambda r: (-residual[r], r))
    chosen = [left.pop(0)]
    while sum(residual[r] for r in chosen) < demand and left:
        nxt = min(left, key=lambda r: (min(dist[c, r] for c in chosen), -residual[r], r))
        left.remove(nxt)
        chosen.append(nxt)
    return tuple(chosen) if sum(residual[r] for r in chosen) >= demand else None


def _literal_nn(racks, dist):
    left = sorted(racks)
    order = [left.pop(0)]
    while left:
        nxt = min(left, key=lambda r: (dist[order[-1], r], r))
        left.remove(nxt)
        order.append(nxt)
    return tuple(order), sum(int(dist[a, b]) for a, b in zip(order, order[1:] + order[:1])) if len(order) > 1 else 0


@settings(max_examples=200, deadline=None)
@given(case=situations())
def test_vectorised_generators_and_nn_ring_match_their_literal_loops(case):
    cluster, residual, demand = case
    res = np.array(residual)
    eligible = np.flatnonzero(res > 0)
    assert best_fit(res, demand, eligible, cluster.dist) == _literal_best_fit(residual, demand, list(eligible))
    if len(eligible):
        assert local_neighbour_first(res, demand, eligible, cluster.dist) == _literal_neighbour_first(
            residual, demand, [int(r) for r in eligible], cluster.dist)
        assert nearest_neighbour_ring(list(eligible), cluster.dist) == _literal_nn(
            [int(r) for r in eligible], cluster.dist)


def test_local_rules():
    cluster = RackCluster.torus((1, 1, 4), capacity=8)
    res = [5, 8, 6, 7]
    assert make_ring_policy("local-first-fit").place(cluster, res, 6).racks == (1,)
    assert make_ring_policy("local-best-fit").place(cluster, res, 6).racks == (2,)
    assert RingStitch().place(cluster, res, 6).racks == (2,)
    assert make_ring_policy("local-best-fit").place(cluster, res, 9) is None


def test_case_d_keeps_large_blocks():
    """§II Case D: a 15-chip job should use the 7- and 8-chip fragments, not a 12-chip block."""
    cluster = RackCluster.torus((1, 2, 2), capacity=16)
    p = RingStitch().place(cluster, [7, 8, 12, 12], 15)
    assert sorted(p.racks) == [0, 1] and p.frag == 0


def test_fragment_first_order():
    assert fragment_first(np.array([9, 3, 5]), [0, 1, 2], 10) == ((1, 3), (2, 5), (0, 2))


def test_unknown_names_error():
    with pytest.raises(ValueError, match="scheduler"):
        make_ring_policy("ring-stitch")
    with pytest.raises(ValueError, match="generators"):
        RingStitch(generators=("best-fit", "nope"))
    with pytest.raises(ValueError, match="residual"):
        RingStitch().place(CLUSTERS[0], [1, 2], 1)
    for name in RING_POLICIES:
        with pytest.raises(ValueError, match="demand"):
            make_ring_policy(name).place(CLUSTERS[0], [8] * 8, 0)


class RackMachine(RuleBasedStateMachine):
    """Arrivals and departures in any order under any policy: placements stay valid and chips
    are conserved (the simulator's invariant, without its queue)."""

    def __init__(self):
        super().__init__()
        self.cluster = CLUSTERS[1]
        self.residual = list(self.cluster.empty_residual())
        self.running: dict[int, tuple[tuple[int, int], ...]] = {}
        self.next_id = 0
        self.policy = None

    @initialize(name=st.sampled_from(sorted(RING_POLICIES)))
    def pick_policy(self, name):
        self.policy = make_ring_policy(name)

    @rule(demand=st.integers(1, 60))
    def arrive(self, demand):
        p = self.policy.place(self.cluster, self.residual, demand)
        if p is None:
            return
        assert placement_violations(self.cluster, self.residual, demand, p) == []
        for r, c in p.alloc:
            self.residual[r] -= c
        self.running[self.next_id] = p.alloc
        self.next_id += 1

    @precondition(lambda self: self.running)
    @rule(data=st.data())
    def depart(self, data):
        jid = data.draw(st.sampled_from(sorted(self.running)))
        for r, c in self.running.pop(jid):
            self.residual[r] += c

    @invariant()
    def chips_conserved(self):
        held = [0] * self.cluster.n
        for alloc in self.running.values():
            for r, c in alloc:
                held[r] += c
        assert all(0 <= x <= self.cluster.capacity for x in self.residual)
        assert [x + h for x, h in zip(self.residual, held)] == [self.cluster.capacity] * self.cluster.n


TestRackMachine = RackMachine.TestCase
TestRackMachine.settings = settings(max_examples=40, stateful_step_count=30, deadline=None)


@pytest.mark.parametrize("name", sorted(n for n in RING_POLICIES if isinstance(make_ring_policy(n), DemandBound)))
@settings(max_examples=60, deadline=None)
@given(case=situations())
def test_demand_bound_is_exactly_where_place_starts_deferring(name, case):
    """The simulator skips ``place`` above ``max_demand``: that is only sound if ``place`` defers
    for every larger demand; here it also places every smaller one (the bound is tight)."""
    cluster, residual, _ = case
    policy = make_ring_policy(name)
    bound = policy.max_demand(cluster, np.array(residual, dtype=np.int64))
    for demand in range(1, cluster.total_chips + 1):
        assert (policy.place(cluster, residual, demand) is None) == (demand > bound), (demand, bound)


@settings(max_examples=150, deadline=None)
@given(case=situations(), penalty=st.sampled_from(["linear", "inverse"]))
def test_full_rack_picks_the_best_of_all_evaluated_candidates(case, penalty):
    """Full-Rack orders the racks of the fewest-rack candidates only; the pick is still the
    minimum over every evaluated candidate on the fully free racks."""
    cluster, residual, demand = case
    pen = FragmentationPenalty(penalty)
    p = make_ring_policy("full-rack", penalty=pen).place(cluster, residual, demand)
    if p is None or p.source == "local":
        return
    res = np.array(residual, dtype=np.int64)
    cands = stitch_candidates(cluster, res, demand, np.flatnonzero(res == cluster.capacity), GENERATOR_NAMES,
                              pen.table(cluster.capacity), EXACT_LIMIT)
    assert p == min(cands, key=lambda c: c.key)

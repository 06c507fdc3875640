"""Baseline placement policies (heuristics.gpu.baselines): node choice, gang admission, state round trips."""
import pytest

from heuristics.gpu.baselines import RULES, NodeRulePolicy, fgd_fragmentation
from heuristics.gpu.cluster import Instance, Job, Placement, placement_violations
from heuristics.gpu.registry import make_policy, policy_names


def _state(*used_per_node: tuple[tuple[int, int], ...]) -> Placement:
    """Placement from per-node (job, g) lists."""
    return Placement(8, tuple(tuple(Instance(j, g) for j, g in node) for node in used_per_node))


# nodes with 3 / 5 / 8 / 2 free GPUs
FREE_3_5_8_2 = _state(((10, 5),), ((11, 3),), (), ((12, 6),))


def test_registered():
    assert {"first-fit", "best-fit", "worst-fit", "fgd"} <= set(policy_names())


@pytest.mark.parametrize("rule", sorted(RULES))
def test_paper_example_3_5_2_free_cannot_admit_2x4(rule):
    # §1/§3 example: 10 idle GPUs spread 3/5/2 cannot host a 2x4 job (one 4 fits, not two).
    start = _state(((1, 5),), ((2, 3),), ((3, 6),))
    p = make_policy(rule, 3).with_state(start)
    res = p.arrive(Job(9, 4, 2))
    assert not res.ok and "offers 1" in res.reason
    assert p.state_key() == start
    assert p.running() == {1: Job(1, 5, 1), 2: Job(2, 3, 1), 3: Job(3, 6, 1)}


@pytest.mark.parametrize("rule, g, node", [
    ("first-fit", 2, 0),  # lowest index with room
    ("best-fit", 2, 3),  # 2 free: exact fit
    ("worst-fit", 2, 2),  # the empty node
    ("best-fit", 1, 3),
])
def test_node_choice(rule, g, node):
    p = make_policy(rule, 4).with_state(FREE_3_5_8_2)
    assert p.arrive(Job(1, g, 1)).ok
    assert Instance(1, g) in p.placement().nodes[node]


def test_fgd_fragmentation_formula():
    p = [0.5, 0, 0, 0.25, 0, 0, 0, 0.25]  # shares of g = 1, 4, 8
    assert fgd_fragmentation(0, p) == 0
    assert fgd_fragmentation(3, p) == pytest.approx(3 * 0.5)  # 4- and 8-GPU tasks cannot use 3
    assert fgd_fragmentation(5, p) == pytest.approx(5 * 0.25)
    assert fgd_fragmentation(8, p) == 0


def test_fgd_avoids_leaving_a_gpu_no_task_can_use():
    # Only 2-GPU tasks expected: a 1-GPU instance on the 2-free node would strand one GPU
    # (ΔF = +1), on the 3-free node it leaves 2 (ΔF = 0) — FGD picks node 0; best-fit node 3.
    dist = [0, 1, 0, 0, 0, 0, 0, 0]
    p = NodeRulePolicy("fgd", 4, demand_dist=dist).with_state(FREE_3_5_8_2)
    assert p.arrive(Job(1, 1, 1)).ok
    assert Instance(1, 1) in p.placement().nodes[0]


def test_fgd_default_distribution_uses_running_plus_arriving():
    p = make_policy("fgd", 2)
    assert p.arrive(Job(1, 4, 1)).ok  # empty cluster: node 0
    # running: one 4; arriving 1-GPU. F(4)=0, F(3)=3·p4; on node 1 (8 free): F(7)-F(8) = 7·0=0
    # since no task demands 8. Node 0 costs 3·0.5 > 0: FGD opens node 1.
    assert p.arrive(Job(2, 1, 1)).ok
    assert Instance(2, 1) in p.placement().nodes[1]


@pytest.mark.parametrize("rule", sorted(RULES))
def test_gang_and_depart_round_trip(rule):
    p = make_policy(rule, 3)
    assert p.arrive(Job(1, 4, 3)).ok
    assert p.arrive(Job(2, 1, 5)).ok
    running = p.running()
    assert placement_violations(p.placement(), running.values()) == []
    assert sum(p.occupancy()) == 3
    assert sum(u * k for u, k in enumerate(p.occupancy())) == sum(j.g * j.w for j in running.values())
    for jid in list(running):
        assert p.depart(jid).ok
    assert p.placement() == make_policy(rule, 3).placement()
    assert p.occupancy() == (3, 0, 0, 0, 0, 0, 0, 0, 0)


@pytest.mark.parametrize("rule", sorted(RULES))
def test_clone_is_independent(rule):
    p = make_policy(rule, 2)
    p.arrive(Job(1, 2, 2))
    q = p.clone()
    assert q.arrive(Job(2, 1, 1)).ok
    assert 2 not in p.running() and 2 in q.running()
    assert q.with_state(p.state_key()).state_key() == p.state_key()


def test_bad_input():
    with pytest.raises(ValueError, match="unknown node rule"):
        NodeRulePolicy("nope", 2)
    p = make_policy("best-fit", 2)
    with pytest.raises(ValueError, match="g=9"):
        p.arrive(Job(1, 9, 1))
    with pytest.raises(ValueError, match="not running"):
        p.depart(5)

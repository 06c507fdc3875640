"""SIFOpt, FFT and DRR natively on mixed node capacities (docs/heterogeneous.md): every SIFOpt
event against the instance-level brute force, DRR by hand, the simulator and ``simulate
--nodes-file`` running them on the whole cluster."""
from __future__ import annotations

import random

import pytest

from conftest import mixed_nodes, tj
from heuristics.gpu.cluster import Instance, Job, Placement
from heuristics.gpu.placeholders import mixed_refusal, runs_natively
from heuristics.gpu.registry import make_policy
from heuristics.gpu.repack_baselines import DRR, FFT
from heuristics.gpu.sifopt import SIFOpt, heuristic_repack, plain
from heuristics.gpu.simulator import SimConfig, on_node_list, simulate
from oracle.gpu.mixed_phi import phi_star_mixed
from oracle.gpu.repack_bruteforce import repack_bruteforce
from proofs_check.cli.simulate import main as simulate_main


def used(p: Placement) -> list[int]:
    return [sum(i.g for i in node) for node in p.nodes]


def partial(p: Placement, caps) -> int:
    return sum(1 for u, c in zip(used(p), caps) if 0 < u < c)


def phi_star(policy, caps) -> int:
    counts = [0] * max(caps)
    for job in policy.running().values():
        counts[job.g - 1] += job.w
    return phi_star_mixed(caps, counts).objective


@pytest.mark.parametrize("seed", range(6))
def test_every_sifopt_event_is_the_brute_force_minimum(seed):
    rng = random.Random(seed)
    caps = rng.choice([(8, 4, 2), (4, 2, 1), (6, 3, 2), (8, 2, 2)])
    pol = SIFOpt(1, 8).on_capacities(caps)
    running: list[int] = []
    for k in range(14):
        before = plain(pol.placement())
        if running and (rng.random() < 0.45 or len(running) > 4):
            jid = running.pop(rng.randrange(len(running)))
            gone = tuple(tuple(i for i in node if i[0] != jid) for node in before)
            res = pol.depart(jid)
            want = repack_bruteforce(gone, list(caps))
        else:
            job = Job(k, rng.choice([1, 1, 2, 3, 4]), rng.choice([1, 1, 2]))
            if job.g > max(caps):
                continue
            res = pol.arrive(job)
            want = repack_bruteforce(before, list(caps), new_items=[(job.id, job.g)] * job.w)
            if want is None:
                assert not res.ok
                continue
            running.append(job.id)
        assert res.ok and want is not None
        assert (len(res.migrations), sum(m.g for m in res.migrations)) == want
        p = pol.placement()
        assert all(u <= c for u, c in zip(used(p), caps)) and all(i.job >= 0 for n in p.nodes for i in n)
        assert partial(p, caps) == phi_star(pol, caps) == pol.partial_empty()[0]
        assert set(pol.running()) == set(running)


@pytest.mark.parametrize("seed", range(3))
def test_the_heuristic_reaches_phi_star_on_mixed_nodes(seed):
    rng = random.Random(seed)
    caps = (8, 8, 4, 4, 2, 2, 1)
    pol = SIFOpt(1, 8, exact_max_nodes=0).on_capacities(caps)  # every repack by heuristic_repack
    live: list[int] = []
    for k in range(40):
        if live and rng.random() < 0.4:
            res = pol.depart(live.pop(rng.randrange(len(live))))
        else:
            res = pol.arrive(Job(k, rng.choice([1, 1, 2, 3, 4, 8]), 1))
            if res.ok:
                live.append(k)
        p = pol.placement()
        assert all(u <= c for u, c in zip(used(p), caps))
        assert partial(p, caps) == phi_star(pol, caps) and set(pol.running()) == set(live)
    assert pol.stats.heuristic > 0 and pol.stats.exact == 0


def test_the_heuristic_packs_the_non_full_nodes_against_their_own_capacity():
    # The non-full nodes are both 4-GPU nodes: their Φ★ witness is per 4-GPU node ([4], [2, 2]),
    # never one 8-GPU pattern [4, 2, 2] (which fits the largest node, not these).
    status, placement, moves, admitted = heuristic_repack((((1, 8),), ((2, 2),), ((3, 2),)), [8, 4, 4],
                                                          new_items=[(4, 4)])
    assert status == "ok" and placement is not None
    assert [sum(g for _, g in node) for node in placement] == [8, 4, 4]
    assert len(moves) == 1 and len(admitted) == 1


def test_one_capacity_through_on_capacities_is_the_plain_policy():
    rng = random.Random(3)
    a, b = SIFOpt(4, 8), SIFOpt(1, 4).on_capacities([8] * 4)
    live: list[int] = []
    for k in range(30):
        if live and rng.random() < 0.4:
            jid = live.pop(rng.randrange(len(live)))
            ra, rb = a.depart(jid), b.depart(jid)
        else:
            job = Job(k, rng.choice([1, 2, 4, 8]), 1)
            ra, rb = a.arrive(job), b.arrive(job)
            if ra.ok:
                live.append(k)
        assert ra == rb and a.placement() == b.placement()


def test_drr_drains_against_each_nodes_own_capacity():
    # Nodes 8, 4, 2: node 2 holds 1 of its 2 GPUs (least used partial node) and node 1 3 of 4.
    # Its instance goes to the fullest non-empty node with room: node 1 (3 used, 1 free).
    drr = DRR(1, 8).on_capacities([8, 4, 2])
    drr = drr.with_state(Placement(8, ((Instance(1, 2),), (Instance(2, 3),), (Instance(3, 1),))))
    moves = drr.tick(0.0).migrations
    assert [(m.job, m.src, m.dst) for m in moves] == [(3, 2, 1)]
    assert used(drr.placement()) == [2, 4, 0] and drr.partial_empty() == (1, 1)


def test_fft_repacks_to_the_mixed_phi_star_at_round_start():
    fft = FFT(1, 8, round_length=10).on_capacities([4, 4, 2])
    assert fft.tick(0.0).migrations == ()
    for job in (Job(1, 1, 1), Job(2, 2, 1)):
        assert fft.arrive(job).ok
    # best-fit: the 1 on the 2-GPU node (fewest free), the 2 on node 0; both partial, Φ★ = 1.
    assert used(fft.placement()) == [2, 0, 1] and fft.partial_empty() == (2, 1)
    assert fft.tick(5.0).migrations == ()  # same round
    moves = fft.tick(12.0).migrations
    assert [(m.job, m.src, m.dst) for m in moves] == [(1, 2, 0)] and fft.partial_empty() == (1, 2)


def test_fillers_stay_internal_and_bad_states_are_refused():
    pol = SIFOpt(1, 8).on_capacities([8, 2])
    assert pol.arrive(Job(0, 2, 1)).ok and used(pol.placement()) == [0, 2]  # best-fit: the full 2-GPU node
    assert set(pol.running()) == {0} and pol.occupancy() == (1, 0, 1, 0, 0, 0, 0, 0, 0)
    with pytest.raises(ValueError, match="exceeds its 2 GPUs"):
        pol.with_state(Placement(8, ((), (Instance(1, 4),))))
    with pytest.raises(ValueError, match="ids must be >= 0"):
        pol.arrive(Job(-3, 1, 1))
    with pytest.raises(ValueError, match="empty cluster"):
        pol.on_capacities([4, 4])


def test_simulator_runs_sifopt_natively_with_sif_zero():
    rng = random.Random(1)
    jobs = [tj(i, rng.uniform(0, 50), rng.uniform(5, 40), rng.choice([1, 1, 2, 4, 8])) for i in range(40)]
    for name in ("sifopt", "fft", "drr"):
        cfg, kept, left = on_node_list(SimConfig(name, 0), mixed_nodes([8, 8, 4, 4, 2, 1]), {}, jobs)
        assert cfg.capacities == (8, 8, 4, 4, 2, 1) and not left
        res = simulate(kept, cfg)
        assert res.status == "complete" and res.phi_star_unknown == 0
        if name == "sifopt":  # Φπ = Φ★ after every event, each node against its own capacity
            assert res.series.partial == res.series.phi_star
    # Model-constrained jobs too, natively (the repack with GPU models: heuristics.gpu.model_repack).
    assert runs_natively("sifopt", (8, 4), True) and mixed_refusal("sifopt", (8, 4), True) is None
    # The node rules run natively too, with GPU models as well (issue 25: no placeholders).
    assert mixed_refusal("best-fit", (8, 4), True) is None and runs_natively("best-fit", (8, 4), True)
    assert make_policy("sifopt", 2, 8).on_capacities([8, 4]).capacities == (8, 4)


def test_simulate_cli_runs_the_migrating_schedulers_on_a_node_list(tmp_path, capsys):
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\n" + "".join(
        f"n{i},1000,1000,{c},M\n" for i, c in enumerate([8, 4, 4, 2, 1])))
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit,duration,g,w\n" + "".join(
        f"{i},{3 * i},{20 + i % 7},{(1, 2, 1, 4)[i % 4]},1\n" for i in range(20)))
    code = simulate_main([str(trace), "--format", "simple", "--nodes-file", str(nodes),
                          "--schedulers", "sifopt,fft,drr,best-fit"])
    out = capsys.readouterr().out
    assert code == 0 and "skipped" not in out
    assert [line.split()[0] for line in out.splitlines() if line.split()[:1] in (["sifopt"], ["fft"], ["drr"],
                                                                                  ["best-fit"])] == \
        ["sifopt", "fft", "drr", "best-fit"]

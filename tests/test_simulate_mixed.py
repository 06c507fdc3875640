"""The timed event simulator on a mixed node list (issue 15 item 3): per-node capacities through
placeholders, AGU over the real GPUs, Φπ per node's own capacity, the mixed Φ★, COMPASS per node
class (hierarchical COMPASS on the 8-GPU partition), migrating schedulers refused (SIFOpt, FFT, DRR only with model-constrained jobs),
unplaceable jobs counted; ``simulate --nodes-file``."""
from __future__ import annotations

import random
import re

import pytest

from conftest import mixed_nodes, tj
from heuristics.gpu.cluster import Instance, Job, Placement
from heuristics.gpu.placeholders import PlaceholderError, PlaceholderPolicy
from heuristics.gpu.policy import EventResult, Migration
from heuristics.gpu.sim_metrics import compute_metrics
from heuristics.gpu.simulator import (SimConfig, Unplaceable, greedy_zero_partial, mixed_phi_star, on_node_list,
                                      simulate, split_placeable)
from oracle.gpu.mixed_phi import ItemType, MixedProblem, mixed_bruteforce
from proofs_check.cli.simulate import main as simulate_main

NODES_HEADER = "sn,cpu_milli,memory_mib,gpu,model\n"
OPENB_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"


def test_hand_computed_run_on_mixed_nodes():
    # nodes 8, 4, 2, 1 (15 GPUs). worst-fit puts the 1-GPU and the 4-GPU job on the 8-GPU node
    # (most free GPUs), so the 8-GPU job waits from t=1 until both leave at t=10.
    jobs = [tj(0, 0, 10, 1), tj(1, 0, 10, 4), tj(2, 1, 1, 8)]
    cfg = SimConfig("worst-fit", 4, 8, capacities=(8, 4, 2, 1))
    res = simulate(jobs, cfg)
    assert res.status == "complete"
    s = res.series
    at = s.t.index(1.0)
    # Φπ = 1 (the 8-GPU node at 5/8); the small nodes are empty, not partial against 8
    assert (s.partial[at], s.empty[at], s.used_gpus[at], s.queue_len[at]) == (1, 3, 5, 1)
    # Φ★ of {1, 4}: the 4 fills the 4-GPU node, the 1 fills the 1-GPU node
    assert s.phi_star[at] == 0.0 and s.hol_frag_blocked[at] == 1  # 10 idle GPUs >= 8
    m = compute_metrics(res)
    assert m.peak_time == 9.0
    assert m.agu == pytest.approx(5 / 15)  # over the real 15 GPUs, not 4 x 8
    assert m.afr == pytest.approx(1 / 4)  # SIF = (1 - 0) / 4 nodes
    assert m.ajct == pytest.approx((10 + 10 + 10) / 3)
    # best-fit fills the nodes exactly: no queue, every node full or empty
    bf = simulate(jobs, SimConfig("best-fit", 4, 8, capacities=(8, 4, 2, 1)))
    assert max(bf.series.partial) == 0 and max(bf.series.queue_len) == 0


def test_a_uniform_node_list_is_exactly_nodes_n():
    rng = random.Random(3)
    jobs = sorted((tj(i, rng.randint(0, 30), rng.randint(1, 20), rng.choice([1, 2, 4, 8]), rng.randint(1, 2))
                   for i in range(25)), key=lambda j: (j.submit, j.id))
    for name in ("best-fit", "fgd", "compass-repaired"):
        base = SimConfig(name, 3, migration_cost=2.0)
        cfg, kept, left = on_node_list(base, mixed_nodes([8, 8, 8]), {}, jobs)
        assert cfg == base and kept == jobs and left == {}
        a, b = simulate(jobs, cfg), simulate(jobs, base)
        assert (a.jobs, a.series, a.status) == (b.jobs, b.series, b.status)


def test_uniform_node_list_cli_matches_nodes_n(tmp_path, capsys):
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit,duration,g,w\n" + "".join(
        f"{i},{i * 3},{10 + i % 7},{[1, 2, 4, 8][i % 4]},1\n" for i in range(20)))
    nodes = tmp_path / "n.csv"
    nodes.write_text(NODES_HEADER + "".join(f"n{i},1,1,8,G2\n" for i in range(3)))
    args = [str(trace), "--schedulers", "best-fit,compass-repaired"]
    assert simulate_main(args + ["--nodes", "3"]) == 0
    plain = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith(("best-fit", "compass"))]
    assert simulate_main(args + ["--nodes-file", str(nodes)]) == 0
    listed = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith(("best-fit", "compass"))]
    assert plain == listed and len(plain) == 2


def test_greedy_certificate_and_mixed_phi_agree_with_brute_force():
    rng = random.Random(8)
    for _ in range(40):
        caps = tuple(rng.choice([1, 2, 4, 8]) for _ in range(rng.randint(1, 4)))
        counts = [0] * 8
        for _ in range(rng.randint(0, 5)):
            counts[rng.choice([1, 1, 2, 4, 8]) - 1] += 1
        problem = MixedProblem.of(caps, counts)
        brute = mixed_bruteforce(problem).objective
        if brute is None:  # does not fit: never asked of the simulator (every running job fits)
            continue
        if greedy_zero_partial(caps, counts):
            assert brute == 0, (caps, counts)
        cfg = SimConfig("best-fit", len(caps), max(caps), capacities=caps)
        assert mixed_phi_star(cfg)(tuple(counts)) == brute, (caps, counts)


def test_model_constrained_jobs_and_their_phi_star():
    # node 0 of model A (8 GPUs), node 1 of model B (8 GPUs): job 1 may only use B
    cfg = SimConfig("best-fit", 2, 8, node_models=("A", "B"), job_models=((1, frozenset({"B"})),))
    jobs = [tj(0, 0, 10, 4), tj(1, 1, 10, 2)]
    seen = []
    res = simulate(jobs, cfg, observer=lambda t, p, r: seen.append(p.placement()))
    assert res.status == "complete"
    after = seen[1]  # best-fit alone would put job 1 beside job 0 on node 0
    assert [i.job for i in after.nodes[1]] == [1]
    # Φ★ with the model set: the 2 must sit on node B, the 4 may join it there: one partial node
    at = res.series.t.index(1.0)
    assert (res.series.partial[at], res.series.phi_star[at]) == (2, 1.0)
    key = ((0, 1, 0, 1, 0, 0, 0, 0), ((ItemType(2, frozenset({"B"})), 1),))
    assert mixed_phi_star(cfg)(key) == mixed_bruteforce(MixedProblem.of(
        (8, 8), {ItemType(4): 1, ItemType(2, frozenset({"B"})): 1}, ("A", "B"))).objective


def test_unplaceable_jobs_are_counted_and_refusals_have_reasons():
    cfg = SimConfig("best-fit", 2, 4, capacities=(4, 2), node_models=("A", "B"),
                    job_models=((2, frozenset({"Z"})),))
    jobs = [tj(0, 0, 1, 8), tj(1, 0, 1, 2, 4), tj(2, 0, 1, 1), tj(3, 0, 1, 2, 3)]
    kept, left = split_placeable(jobs, cfg)
    assert [j.id for j in kept] == [3]
    assert left == {Unplaceable.TOO_BIG: 1, Unplaceable.TOO_WIDE: 1, Unplaceable.NO_MODEL: 1}
    with pytest.raises(ValueError, match="job 0: g exceeds every node's capacity"):
        simulate(jobs, cfg)
    for name in ("sifopt", "fft", "drr"):  # they run natively on mixed capacities (tests/test_sifopt_mixed.py)
        cfg, _, _ = on_node_list(SimConfig(name, 0), mixed_nodes([8, 4]), {}, jobs)
        assert cfg.capacities == (8, 4)
        cfg, _, _ = on_node_list(SimConfig(name, 0), mixed_nodes([8, 4]), {3: frozenset({"M"})}, jobs)
        assert cfg.job_models == ((3, frozenset({"M"})),)  # gpu_spec jobs too (heuristics.gpu.model_repack)
    cfg, _, _ = on_node_list(SimConfig("compass-literal", 0), mixed_nodes([8, 4, 8]), {3: frozenset({"M"})}, jobs)
    assert (cfg.n_nodes, cfg.capacities, cfg.gpus) == (3, (8, 4, 8), 20)  # per node class (compass_mixed)
    with pytest.raises(ValueError, match="no 8-GPU node"):
        on_node_list(SimConfig("hier-compass", 0), mixed_nodes([4, 2]), {}, jobs)
    cfg, _, _ = on_node_list(SimConfig("hier-compass", 0), mixed_nodes([8, 4, 8]), {}, jobs)
    assert (cfg.n_nodes, cfg.capacities, cfg.gpus) == (2, (), 16)  # the 8-GPU partition, plain


def test_placeholders_stay_and_metrics_use_real_capacities():
    p = PlaceholderPolicy("first-fit", (2, 8))
    assert p.arrive(Job(0, 4, 1)).ok and p.used() == (0, 4)  # the 2-GPU node cannot take 4
    assert p.arrive(Job(1, 2, 1)).ok and p.used() == (2, 4)
    assert p.partial_empty() == (1, 0) and set(p.running()) == {0, 1}
    assert not p.arrive(Job(2, 8, 1)).ok
    p.check_placeholders()
    p.policy = p.policy.with_state(Placement(8, ((Instance(-1, 6), Instance(1, 2)), (Instance(0, 4),))))
    p.check_placeholders()  # same state, rebuilt
    p.policy = p.policy.with_state(Placement(8, ((Instance(1, 2),), (Instance(-1, 6),))))
    with pytest.raises(PlaceholderError, match="placeholder changed"):
        p.check_placeholders()
    with pytest.raises(PlaceholderError, match="placeholder was moved"):
        PlaceholderPolicy._checked(EventResult.applied((Migration(-1, 6, 0, 1, "test"),)))


def _write(tmp_path, specs=("B", "Q")):
    pods = tmp_path / "pods.csv"
    rows = [(1, "", 0, 100), (2, "", 5, 50), (8, "", 10, 40), (4, "", 12, 30), (1, specs[0], 15, 30),
            (1, specs[1], 16, 20), (2, "", 20, 30)]
    pods.write_text(OPENB_HEADER + "".join(
        f"p{i},1,1,{g},1000,{spec},LS,Running,{c},{c + d},{c}\n" for i, (g, spec, c, d) in enumerate(rows)))
    nodes = tmp_path / "nodes.csv"
    nodes.write_text(NODES_HEADER + "".join(
        f"n{i},1,1,{c},{m}\n" for i, (c, m) in enumerate([(8, "A"), (8, "A"), (4, "B"), (2, "B"), (1, "A")])))
    return str(pods), str(nodes)


def test_simulate_nodes_file_mixed(tmp_path, capsys):
    pods, nodes = _write(tmp_path)
    rc = simulate_main([pods, "--format", "openb", "--nodes-file", nodes,
                        "--schedulers", "best-fit,fgd,sifopt,drr,compass-repaired", "--out", str(tmp_path / "o")])
    out = capsys.readouterr().out
    assert rc == 0
    assert "5 GPU nodes (2×8-GPU, 1×4-GPU, 1×2-GPU, 1×1-GPU), 23 GPUs" in out
    assert "sifopt skipped" not in out and "drr skipped" not in out  # both honour gpu_spec
    assert "skipped" not in out  # COMPASS per node class honours gpu_spec too (heuristics.gpu.compass_mixed)
    assert "best-fit: 1 job(s) of pods left out: gpu_spec matches no node" in out
    rows = {ln.split()[0]: ln.split() for ln in out.splitlines()
            if ln.startswith(("best-fit", "fgd", "sifopt", "drr", "compass"))}
    assert set(rows) == {"best-fit", "fgd", "sifopt", "drr", "compass-repaired"}
    assert rows["best-fit"][4] == rows["compass-repaired"][4] == "5"
    assert all(r[5] == "complete" for r in rows.values())
    series = (tmp_path / "o" / "series" / "best-fit_eta0.9_c8_all.csv").read_text().splitlines()
    used = [int(line.split(",")[3]) for line in series[1:]]
    assert [float(line.split(",")[-1]) for line in series[1:]] == [u / 23 for u in used]  # over the real GPUs
    pods, _ = _write(tmp_path, ("", ""))
    assert simulate_main([pods, "--format", "openb", "--nodes-file", nodes, "--schedulers", "compass-repaired"]) == 0
    out = capsys.readouterr().out
    assert "partition" not in out
    row = next(ln.split() for ln in out.splitlines() if ln.startswith("compass"))
    assert row[4] == "5" and row[5] == "complete"


def test_simulate_nodes_file_usage_errors(tmp_path, capsys):
    pods, nodes = _write(tmp_path)
    assert simulate_main([pods, "--format", "openb", "--nodes-file", nodes, "--schedulers", "hier-compass",
                          "--policy-opt", "hier-compass:panels_per_domain=2"]) == 2  # model-constrained jobs
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no scheduler can run on this cluster" in err[0]
    bad = tmp_path / "bad.csv"
    bad.write_text(NODES_HEADER + "n0,1,1,x,A\n")
    assert simulate_main([pods, "--format", "openb", "--nodes-file", str(bad), "--schedulers", "best-fit"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(r"bad.csv:2: field 'gpu'", err[0])

"""Fill-until-full (heuristics.gpu.fill), the 5-column openb pod lists, and ``simulate --mode fill``."""
from __future__ import annotations

import json
import random
import re

import pytest

from heuristics.gpu import fill
from heuristics.gpu.node_list import GpuNode, NodeList
from heuristics.gpu.placeholders import PlaceholderPolicy
from heuristics.gpu.trace import TraceError
from heuristics.gpu.trace_loaders import Pod, load_openb, load_openb_pods, openb_has_times
from oracle.gpu.mixed_phi import ItemType, MixedProblem, mixed_bruteforce
from proofs_check.cli.simulate import main as simulate_main

FIVE = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
ELEVEN = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"


def _cluster(caps, models=None):
    models = models or ["M"] * len(caps)
    return NodeList("test", tuple(GpuNode(f"n{i}", c, m, 0) for i, (c, m) in enumerate(zip(caps, models))))


def _pods(gs, models=None):
    return tuple(Pod(i + 2, f"p{i}", g, None if models is None else models[i]) for i, g in enumerate(gs))


def test_five_column_lists_load_with_filters_counted(tmp_path):
    p = tmp_path / "openb_pod_list_multigpu50.csv"
    p.write_text(FIVE + "a,1,1,1,1000\nb,1,1,1,460\nc,1,1,0,0\nd,1,1,8,1000\ne,1,1,12,1000\nf,1,1,2,1000\n")
    pods = load_openb_pods(p)
    assert [q.g for q in pods.pods] == [1, 8, 2] and not pods.timed and not openb_has_times(p)
    assert pods.report.dropped == {"fractional GPU": 1, "CPU-only": 1, "g>8 per instance": 1}
    assert pods.report.rows == 6 and pods.report.kept == 3
    with pytest.raises(TraceError, match="field 'pod_phase': missing from header"):
        load_openb(p)  # the timed loader still needs the times
    bad = tmp_path / "bad.csv"
    bad.write_text(FIVE + "a,1,1,x,1000\n")
    with pytest.raises(TraceError, match=r"bad.csv:2: field 'num_gpu'"):
        load_openb_pods(bad)


def test_eleven_column_lists_keep_gpu_spec(tmp_path):
    p = tmp_path / "spec.csv"
    p.write_text(ELEVEN + "a,1,1,1,1000,V100M16|V100M32,LS,Running,0,10,0\nb,1,1,2,1000,,LS,Running,0,10,0\n")
    pods = load_openb_pods(p)
    assert pods.timed and openb_has_times(p)
    assert pods.pods[0].models == frozenset({"V100M16", "V100M32"}) and pods.pods[1].models is None


def test_submission_sequence():
    pods = _pods([1, 2, 4, 8])
    assert fill.submission_sequence(pods, "file", 0, None) == pods
    a = fill.submission_sequence(pods, "shuffled", 7, None)
    assert sorted(a) == sorted(pods) and a == fill.submission_sequence(pods, "shuffled", 7, None)
    long = fill.submission_sequence(pods, "shuffled", 1, 40)  # 15 GPUs per pass: drawn three times
    assert sum(p.g for p in long) >= 40 and sum(p.g for p in long[:-1]) < 40


def _reference(caps, gs, key):
    """Independent mixed-capacity placement: each pod to the node with the smallest key."""
    free, used, failed = list(caps), [0] * len(caps), []
    for i, g in enumerate(gs):
        fits = [n for n in range(len(caps)) if free[n] >= g]
        if not fits:
            failed.append(i)
            continue
        n = min(fits, key=lambda n: key(free[n], n, g))
        free[n] -= g
        used[n] += g
    return tuple(used), tuple(failed)


@pytest.mark.parametrize("name", ["best-fit", "fgd"])
def test_placeholders_decide_like_real_capacities(name):
    rng = random.Random(5)
    for _ in range(30):
        caps = [rng.choice([1, 2, 4, 8]) for _ in range(rng.randint(1, 6))]
        gs = [rng.choice([1, 1, 1, 2, 4, 8]) for _ in range(rng.randint(1, 25))]
        seq = _pods(gs)
        p = fill.demand_shares(seq, max(caps))

        def frag(f):
            return f * sum(p[f:])

        key = ((lambda f, n, g: (f, n)) if name == "best-fit"
               else (lambda f, n, g: (frag(f - g) - frag(f), f, n)))
        cluster = _cluster(caps)
        res = fill.run_fill(name, cluster, seq)
        sched = PlaceholderPolicy(name, caps, None, None, {"demand_dist": p})
        for i, pod in enumerate(seq):
            sched.arrive(fill.Job(i, pod.g, 1))
        assert (sched.used(), res.failed) == _reference(caps, gs, key), (caps, gs)


def test_run_records_and_bound_holds():
    rng = random.Random(11)
    for _ in range(12):
        caps = [rng.choice([1, 2, 4, 8]) for _ in range(rng.randint(1, 4))]
        seq = _pods([rng.choice([1, 2, 2, 4, 8]) for _ in range(rng.randint(1, 8))])
        cluster = _cluster(caps)
        first = fill.oracle_first_failure(cluster, seq)
        for name in ("best-fit", "fgd", "first-fit", "worst-fit"):
            r = fill.run_fill(name, cluster, seq)
            assert all(a <= q for a, q in zip(r.allocated, r.requested))
            assert len(r.failed) == sum(1 for i in range(len(seq)) if r.allocated[i] == (r.allocated[i - 1] if i else 0))
            assert first is not None and (not r.failed or r.failed[0] <= first)
            for b in fill.bound_points(cluster, seq, range(len(seq) + 1)):
                assert b.min_unallocated is not None
                unallocated = cluster.total_gpus - (r.allocated[b.k - 1] if b.k else 0)
                assert unallocated >= b.min_unallocated
        # the bound is exact: a brute force over pod-to-node assignments agrees
        demand: dict[ItemType, int] = {}
        for q in seq:
            demand[ItemType(q.g)] = demand.get(ItemType(q.g), 0) + 1
        brute = mixed_bruteforce(MixedProblem.of(caps, demand), "unplaced").objective
        assert fill.min_unplaced(cluster, seq) == brute
        assert (first == len(seq)) == (brute == 0)


def test_compass_runs_on_the_whole_cluster():
    cluster = _cluster([8, 2, 8, 4])
    r = fill.run_fill("compass-literal", cluster, _pods([8, 8, 2, 4, 2]))
    assert (r.n_nodes, r.cluster_gpus, r.cluster) == (4, 22, cluster.source)
    assert r.failed == (4,)  # 8, 8 → the 8-GPU nodes, 2 → the 2-GPU node, 4 → the 4-GPU node, then nothing fits 2


def test_model_constrained_pods_go_to_their_models():
    cluster = _cluster([8, 8, 2], ["A", "B", "A"])
    seq = _pods([2, 8, 8, 1], [frozenset({"B"}), frozenset({"A"}), frozenset({"A"}), None])
    r = fill.run_fill("best-fit", cluster, seq)
    assert r.failed == (2,)  # the second A-only 8-GPU pod: the B node holds the 2
    assert fill.run_fill("compass-literal", cluster, seq).failed == (2,)  # natively (tests/test_compass_mixed.py)
    with pytest.raises(ValueError, match="not a placement"):
        fill.run_fill("hier-compass", _cluster([8, 8], ["A", "B"]), seq[:1], {"panels_per_domain": 2})


def _five_col_file(tmp_path):
    p = tmp_path / "openb_pod_list_multigpu20.csv"
    p.write_text(FIVE + "".join(f"p{i},1,1,{g},1000\n" for i, g in enumerate([1, 2, 4, 8, 1, 1, 8, 2, 4, 1] * 3))
                 + "q,1,1,1,300\n")
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\n" + "".join(
        f"n{i},1,1,{c},{m}\n" for i, (c, m) in enumerate([(8, "G2"), (8, "G2"), (4, "T4"), (2, "P100"), (1, "A10")])))
    return str(p), str(nodes)


def test_simulate_detects_the_five_column_shape(tmp_path, capsys):
    pods, nodes = _five_col_file(tmp_path)
    out = tmp_path / "out"
    rc = simulate_main([pods, "--format", "openb", "--nodes-file", nodes, "--schedulers", "best-fit,compass-literal",
                        "--out", str(out), "--plot"])
    text = capsys.readouterr().out
    assert rc == 0 and "mode: fill-until-full (detected: pod list without times)" in text
    assert re.search(r"dropped\s+1\s+fractional GPU", text) and "30 whole-GPU pods kept" in text
    assert "defined for 8-GPU nodes" not in text and "exact bound (part.)" not in text and "exact bound" in text
    meta = json.loads((out / "fill_summary.json").read_text())
    assert [r["label"] for r in meta["rows"]][:2] == ["best-fit", "compass-literal"]
    assert (out / "fill_curve.csv").is_file() and (out / "fill.png").is_file()


def test_simulate_fill_usage_errors(tmp_path, capsys):
    pods, nodes = _five_col_file(tmp_path)
    assert simulate_main([pods, "--format", "openb"]) == 2  # no cluster
    assert "--nodes-file PATH or --nodes N" in capsys.readouterr().err
    assert simulate_main([pods, "--format", "openb", "--nodes", "2", "--nodes-file", nodes]) == 2


def test_simulate_timed_replay_takes_a_list_of_8gpu_nodes(tmp_path, capsys):
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit,duration,g,w\n0,0,10,4,1\n1,1,10,8,1\n")
    nodes = tmp_path / "n.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,8,G2\nn1,1,1,8,G3\n")
    assert simulate_main([str(trace), "--nodes-file", str(nodes), "--schedulers", "best-fit"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("best-fit"))
    assert row.split()[4] == "2"  # N from the node list

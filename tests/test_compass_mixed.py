"""COMPASS on mixed clusters natively (issue 25): one COMPASS-ABS per node class
(``heuristics.gpu.compass_mixed``), ``gpu_spec`` honoured, no placeholder jobs."""
from __future__ import annotations

import random

import pytest

from heuristics.gpu import fill
from heuristics.gpu.cluster import Job, placement_violations
from heuristics.gpu.compass import Compass
from heuristics.gpu.compass_mixed import MixedCompass, node_classes
from heuristics.gpu.node_list import GpuNode, NodeList
from heuristics.gpu.placeholders import mixed_policy, run_cluster
from heuristics.gpu.trace_loaders import Pod
from proofs_check.testing import check_policy


@pytest.mark.parametrize("capacity", [1, 2, 4])
def test_each_class_capacity_runs_a_sound_compass(capacity: int) -> None:
    """A class's COMPASS on G = 1, 2, 4 keeps the scheduler contract and never lacks a legal move
    on every event sequence within the bounds (the exhaustive explorer, as for G = 8), and its
    SIF stays within Φπ − Φ★ ≤ 2 with Φ★ of G = ``capacity``."""
    results = check_policy(lambda n, cap=capacity: Compass(n, cap, "repaired"),
                           ["policy.valid", "policy.no-stuck", "policy.sif"], max_nodes=2, depth=4,
                           demands=range(1, capacity + 1), capacity=capacity, max_w=2)
    assert [r.verdict.value for r in results] == ["holds"] * 3


def test_node_classes_group_by_capacity_and_by_model_only_when_asked() -> None:
    caps, models = [8, 2, 8, 2, 4], ["A", "B", "C", "B", "A"]
    assert [(k.capacity, k.nodes) for k in node_classes(caps, models, False)] == [(8, (0, 2)), (2, (1, 3)), (4, (4,))]
    assert [(k.capacity, k.model, k.nodes) for k in node_classes(caps, models, True)] == [
        (8, "A", (0,)), (2, "B", (1, 3)), (8, "C", (2,)), (4, "A", (4,))]
    with pytest.raises(ValueError, match="nodes of 3, 6"):
        node_classes([8, 3, 6], None, False)


def test_on_one_capacity_it_is_compass_itself() -> None:
    rng = random.Random(5)
    mixed, plain = MixedCompass("repaired", [8] * 4), Compass(4, 8, "repaired")
    live: list[int] = []
    for i in range(300):
        if live and rng.random() < 0.4:
            j = live.pop(rng.randrange(len(live)))
            assert mixed.depart(j) == plain.depart(j)
        else:
            job = Job(i, rng.randint(1, 8), rng.randint(1, 3))
            res, want = mixed.arrive(job), plain.arrive(job)
            assert res[:2] == want[:2]  # outcome and migrations; a refusal's text names the class
            if res.ok:
                live.append(i)
        assert mixed.placement() == plain.placement() and mixed.partial_empty() == (plain.partial_count(),
                                                                                     plain.empty_count())


def test_a_job_goes_to_the_smallest_class_that_takes_it_whole() -> None:
    c = MixedCompass("literal", [8, 2, 1])
    assert c.arrive(Job(0, 1, 1)).ok and c.placement().nodes[2]  # the 1-GPU node first
    assert c.arrive(Job(1, 2, 1)).ok and c.placement().nodes[1]  # then the 2-GPU node
    assert c.arrive(Job(2, 4, 1)).ok and c.placement().nodes[0]  # a 4-GPU job: only the 8-GPU node
    small = MixedCompass("literal", [2, 1])
    res = small.arrive(Job(0, 1, 3))  # 3 GPUs free, but no class holds all three instances
    assert not res.ok and "2-GPU nodes" in res.reason and "1-GPU nodes" in res.reason
    assert small.placement().nodes == ((), ())


def test_random_events_keep_capacities_gangs_models_and_classes() -> None:
    rng = random.Random(11)
    for trial in range(25):
        n = rng.randint(2, 7)
        caps = [rng.choice([1, 2, 4, 8]) for _ in range(n)]
        models = [rng.choice("AB") for _ in range(n)]
        job_models = {i: frozenset(rng.choice(["A", "B", "AB"])) for i in range(200) if rng.random() < 0.3}
        c = mixed_policy(f"compass-{rng.choice(['literal', 'repaired'])}", caps, models, job_models)
        assert isinstance(c, MixedCompass)
        klass = {n: k for k, cl in enumerate(c.classes) for n in cl.nodes}
        running: dict[int, Job] = {}
        for i in range(200):
            before = c.placement()
            if running and rng.random() < 0.4:
                j = rng.choice(list(running))
                res = c.depart(j)
                del running[j]
            else:
                job = Job(i, rng.choice([1, 1, 2, 4, 8]), rng.randint(1, 3))
                if job.g > max(caps):
                    continue
                res = c.arrive(job)
                if res.ok:
                    running[i] = job
                elif not res.failed:
                    assert c.placement() == before, "a refused arrival changed the placement"
            assert not res.failed, res.reason
            p = c.placement()
            assert placement_violations(p, running.values()) == []
            assert all(sum(x.g for x in node) <= caps[k] for k, node in enumerate(p.nodes))
            hosts: dict[int, set[int]] = {}
            for k, node in enumerate(p.nodes):
                for x in node:
                    hosts.setdefault(x.job, set()).add(k)
                    allowed = job_models.get(x.job)
                    assert allowed is None or models[k] in allowed, f"job {x.job} on a {models[k]} node"
            assert all(len({klass[k] for k in ks}) == 1 for ks in hosts.values()), "a job across classes"
            assert all(klass[m.src] == klass[m.dst] for m in res.migrations)
            assert c.running() == running


def _cluster(caps: list[int], models: list[str] | None = None) -> NodeList:
    models = models or ["M"] * len(caps)
    return NodeList("test", tuple(GpuNode(f"n{i}", c, m, 0) for i, (c, m) in enumerate(zip(caps, models))))


def test_fill_runs_compass_on_the_whole_cluster_with_gpu_spec() -> None:
    cluster = _cluster([8, 2, 2], ["V100", "T4", "T4"])
    assert run_cluster("compass-literal", cluster) == cluster
    assert run_cluster("hier-compass", cluster).n_nodes == 1  # multi-node instances: 8-GPU nodes only
    seq = [Pod(1, "a", 2, frozenset({"V100"})), Pod(2, "b", 2, None), Pod(3, "c", 2, None), Pod(4, "d", 8, None)]
    assert fill.unsupported("compass-literal", cluster, seq) is None
    r = fill.run_fill("compass-literal", cluster, seq)
    # a → the 8-GPU V100 node (its model); b, c → the two T4 nodes (smallest class first); d no longer fits
    assert (r.cluster_gpus, r.failed, r.allocated[-1]) == (12, (3,), 6)


def test_a_class_compass_refuses_as_on_8_gpu_nodes_and_the_counterexample_reads_its_phi_star() -> None:
    """As on 8-GPU nodes (``verify --policy compass-repaired``: policy.admission), a pool node
    takes no 2-GPU instance; the counterexample's figures read Φ★ of G = 4 (the record once asked
    the oracle for n_1..n_8 and crashed: ``facts.exact_phi_star``)."""
    with pytest.raises(AssertionError) as e:
        check_policy(lambda n, cap=4: Compass(n, 4, "repaired"), ["policy.admission"], max_nodes=1, depth=2,
                     demands=range(1, 5), capacity=4, max_w=1)
    assert "+J1 (g=2,w=1)  -> NOT APPLIED" in str(e.value) and "node 0: 1/4 partial J0(g=1)" in str(e.value)
    assert "Φπ=1, Φ★=1, SIF=0" in str(e.value)

"""Mixed clusters natively (issue 25): node capacities and GPU models inside the cluster model,
no placeholder jobs — MCG's demand estimate and balance term read the real nodes, ``gpu_spec``
is honoured, FFT/DRR/SIFOpt run in fill mode on a node list."""
from __future__ import annotations

import random

import pytest

from heuristics.gpu import fill
from heuristics.gpu.cluster import Instance, Job
from heuristics.gpu.mcg import MCG
from heuristics.gpu.node_list import GpuNode, NodeList
from heuristics.gpu.placeholders import PlaceholderPolicy, mixed_policy
from heuristics.gpu.registry import make_policy
from heuristics.gpu.trace_loaders import Pod
from oracle.gpu.mixed_phi import ItemType, phi_star_mixed
from oracle.gpu.typed_repack import typed_repack_bruteforce


def _cluster(caps: list[int], models: list[str] | None = None) -> NodeList:
    models = models or ["M"] * len(caps)
    return NodeList("test", tuple(GpuNode(f"n{i}", c, m, 0) for i, (c, m) in enumerate(zip(caps, models))))


@pytest.mark.parametrize("name", ["first-fit", "best-fit", "worst-fit", "fgd"])
def test_native_decides_as_the_placeholders_for_free_gpu_rules(name: str) -> None:
    """For rules that read only free GPUs, native capacities and placeholders give one run."""
    rng = random.Random(3)
    for _ in range(20):
        caps = [rng.choice([1, 2, 4, 8]) for _ in range(rng.randint(2, 6))]
        dist = [1 / max(caps)] * max(caps)
        native = mixed_policy(name, caps, opts={"demand_dist": dist})
        assert not isinstance(native, PlaceholderPolicy)
        ph = PlaceholderPolicy(name, caps, None, None, {"demand_dist": dist})
        for i in range(rng.randint(1, 20)):
            g = rng.choice([1, 1, 2, 4, 8])
            if g > max(caps):
                continue
            job = Job(i, g, rng.choice([1, 1, 2]))
            assert native.arrive(job).ok == ph.arrive(job).ok
            if rng.random() < 0.2 and native.placement().nodes[0]:
                gone = native.placement().nodes[0][0].job
                native.depart(gone), ph.depart(gone)
        assert tuple(sum(i.g for i in node) for node in native.placement().nodes) == ph.used()


def test_mcg_reads_small_nodes_as_small_and_counts_only_real_instances() -> None:
    caps = [8, 2, 2, 2]
    mcg = mixed_policy("mcg", caps)
    assert isinstance(mcg, MCG) and mcg.partial_empty() == (0, 4)
    assert mcg._shares([]) == [0.0] * 8  # no placeholder "jobs" in the demand estimate
    # The balance term reads an empty 2-GPU node as empty (through a placeholder it read 6/8 used):
    # a 2-GPU instance there adds ((0 + 2)² − 0²)/2² = 1, not ((6 + 2)² − 6²)/8² = 0.4375.
    p = [0.0, 1.0] + [0.0] * 6
    assert mcg._rule(2, 1, 2, p, 2)[0] == pytest.approx(1.0)
    assert mcg.arrive(Job(0, 2, 1)).ok and mcg.partial_empty() == (1, 3)  # balance: onto the 8-GPU node
    small = mixed_policy("mcg", [2, 2])
    assert small.arrive(Job(1, 2, 1)).ok and small.partial_empty() == (0, 1)  # full at its own capacity


def test_gpu_spec_is_honoured_natively() -> None:
    caps, models = [8, 8, 4], ["A", "B", "B"]
    for name in ("best-fit", "fgd", "cafgd", "mcg", "worst-fit"):
        pol = mixed_policy(name, caps, models, {1: frozenset({"A"}), 2: frozenset({"B"}), 3: frozenset({"A"})},
                           opts={"max_hold": 0.0} if name == "cafgd" else None)
        assert not isinstance(pol, PlaceholderPolicy)
        assert pol.arrive(Job(1, 4, 1)).ok and pol.arrive(Job(2, 4, 3)).ok
        nodes = pol.placement().nodes
        assert [n for n, node in enumerate(nodes) if any(i.job == 1 for i in node)] == [0], name
        assert all(models[n] == "B" for n, node in enumerate(nodes) for i in node if i.job == 2), name
        assert not pol.arrive(Job(3, 8, 1)).ok  # the only A node has 4 free GPUs
        assert pol.arrive(Job(4, 4, 1)).ok       # an unconstrained job takes them


def test_drr_honours_gpu_spec_in_placement_and_in_its_drain() -> None:
    """DRR runs natively with model-constrained jobs: best-fit places them on nodes of their
    models, and its drain moves an instance only to a node of its models (else nothing moves)."""
    caps, models = [8, 8, 8], ["A", "B", "B"]
    pol = mixed_policy("drr", caps, models, {1: frozenset({"A"}), 2: frozenset({"B"})})
    assert not isinstance(pol, PlaceholderPolicy)
    assert pol.arrive(Job(1, 1, 1)).ok and pol.arrive(Job(2, 6, 1)).ok
    assert pol.placement().nodes[:2] == ((Instance(1, 1),), (Instance(2, 6),))  # each on its model's node
    assert pol.tick(0.0).migrations == ()  # the least-used node holds J1, whose only model is A: no target
    assert pol.placement().nodes[0] == (Instance(1, 1),)
    free = mixed_policy("drr", caps, models, {2: frozenset({"B"})})  # the same jobs, J1 unconstrained
    assert free.arrive(Job(1, 1, 1)).ok and free.arrive(Job(2, 6, 1)).ok
    (move,) = free.tick(0.0).migrations
    assert (move.job, move.src, move.dst) == (1, 0, 1)
    assert pol.arrive(Job(3, 8, 1)).ok and pol.placement().nodes[2] == (Instance(3, 8),)
    assert not mixed_policy("drr", caps, models, {4: frozenset({"A"})}).arrive(Job(4, 4, 3)).ok  # one A node


def test_drr_without_constrained_jobs_decides_as_before() -> None:
    """Model sets that allow every model change nothing: the same run, event by event."""
    rng = random.Random(5)
    for _ in range(10):
        caps = [rng.choice([1, 2, 4, 8]) for _ in range(rng.randint(2, 6))]
        models = [rng.choice("AB") for _ in caps]
        jobs = [Job(i, rng.choice([g for g in (1, 2, 4, 8) if g <= max(caps)]), rng.choice([1, 1, 2]))
                for i in range(12)]
        plain = mixed_policy("drr", caps) if len(set(caps)) > 1 else make_policy("drr", len(caps), caps[0])
        spec = mixed_policy("drr", caps, models, {j.id: frozenset("AB") for j in jobs})
        for t, job in enumerate(jobs):
            assert plain.tick(100.0 * t).migrations == spec.tick(100.0 * t).migrations
            assert plain.arrive(job).ok == spec.arrive(job).ok
            assert plain.placement() == spec.placement()
            if rng.random() < 0.3 and plain.running():
                gone = rng.choice(sorted(plain.running()))
                plain.depart(gone), spec.depart(gone)


def _honours(pol: object, caps: list[int], models: list[str], jm: dict[int, frozenset[str]]) -> bool:
    nodes = pol.placement().nodes  # type: ignore[attr-defined]
    return all(sum(i.g for i in node) <= caps[n] and all(i.job not in jm or models[n] in jm[i.job] for i in node)
               for n, node in enumerate(nodes))


def _constrained_cluster(rng: random.Random, max_nodes: int,
                         jobs: int) -> tuple[list[int], list[str], dict[int, frozenset[str]]]:
    """2..max_nodes nodes of 2, 4 or 8 GPUs of models A / B; about half of ``jobs`` job ids constrained."""
    caps = [rng.choice([2, 4, 8]) for _ in range(rng.randint(2, max_nodes))]
    models = [rng.choice("AB") for _ in caps]
    return caps, models, {j: frozenset(rng.choice(["A", "B", "AB"])) for j in range(jobs) if rng.random() < 0.5}


def _items(pol: object) -> list[list[tuple[int, int]]]:
    return [[(i.job, i.g) for i in node] for node in pol.placement().nodes]  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["sifopt", "fft"])
def test_sifopt_and_fft_honour_gpu_spec_with_the_fewest_migrations(name: str) -> None:
    """With model-constrained jobs SIFOpt (every event) and FFT (every round) repack to the
    model-aware Φ★ by exactly the fewest migrations the brute force finds
    (``oracle.gpu.typed_repack_bruteforce``), every instance on a node of its models; SIFOpt
    admits a job exactly when some packing holds it."""
    rng = random.Random(21)
    moved = 0
    for _ in range(25):
        caps, models, jm = _constrained_cluster(rng, 4, 8)
        pol = mixed_policy(name, caps, models, jm)
        assert not isinstance(pol, PlaceholderPolicy)
        for t in range(8):
            now = _items(pol)
            if pol.running() and rng.random() < 0.35:
                j = rng.choice(sorted(pol.running()))
                best = typed_repack_bruteforce([[it for it in n if it[0] != j] for n in now], caps, models, jm)
                res = pol.depart(j)
            else:
                g, w = rng.choice([x for x in (1, 2, 4) if x <= max(caps)]), rng.choice([1, 1, 2])
                if sum(map(len, now)) + w > 6:
                    continue
                best = typed_repack_bruteforce(now, caps, models, jm, [(t, g)] * w)
                res = pol.arrive(Job(t, g, w))
                if name == "sifopt":
                    assert res.ok == (best is not None)
            if name == "fft":
                assert not res.migrations  # best-fit within the round
                best = typed_repack_bruteforce(_items(pol), caps, models, jm)
                res = pol.tick(300.0 * (t + 1))
            assert _honours(pol, caps, models, jm)
            if res.ok and best is not None:
                assert len(res.migrations) == best[0], (name, caps, models, jm, now)
                assert typed_repack_bruteforce(_items(pol), caps, models, jm) == (0, 0)  # Φπ = Φ★ now
                moved += len(res.migrations)
    assert pol.stats.stuck == 0 and moved > 3


def test_the_heuristic_repack_with_models_keeps_models_and_reaches_phi_star_unless_stuck() -> None:
    """Beyond ``exact_max_nodes`` (0 here) SIFOpt's repack with models is the drain of
    ``heuristics.gpu.model_repack``: every instance stays on nodes of its models, and Φπ = Φ★
    after every repack the drain did not report stuck."""
    rng = random.Random(22)
    reached = 0
    for _ in range(30):
        caps, models, jm = _constrained_cluster(rng, 5, 10)
        pol = mixed_policy("sifopt", caps, models, jm, {"exact_max_nodes": 0})
        for t in range(10):
            stuck = pol.stats.stuck
            if pol.running() and rng.random() < 0.4:
                pol.depart(rng.choice(sorted(pol.running())))
            elif not pol.arrive(Job(t, rng.choice([x for x in (1, 2, 4) if x <= max(caps)]), rng.choice([1, 2]))).ok:
                continue
            assert _honours(pol, caps, models, jm)
            if pol.stats.stuck == stuck:
                assert pol.partial_empty()[0] == typed_phi(pol, caps, models, jm)
                reached += 1
    assert pol.stats.exact == 0 and reached > 50


def typed_phi(pol: object, caps: list[int], models: list[str], jm: dict[int, frozenset[str]]) -> int:
    """Φ★ of the running jobs with their model sets (``oracle.gpu.mixed_phi``)."""
    demand: dict[ItemType, int] = {}
    for job in pol.running().values():  # type: ignore[attr-defined]
        t = ItemType(job.g, jm.get(job.id))
        demand[t] = demand.get(t, 0) + job.w
    value = phi_star_mixed(caps, demand, models).objective
    assert value is not None
    return value


@pytest.mark.parametrize("name", ["sifopt", "fft", "drr"])
def test_migrating_schedulers_run_fill_mode_on_a_node_list(name: str) -> None:
    cluster = _cluster([8, 8, 4, 2, 2, 1])
    seq = tuple(Pod(i + 2, f"p{i}", g, None) for i, g in enumerate([2, 1, 4, 2, 1, 8, 2, 1, 1, 4, 2, 8]))
    assert fill.unsupported(name, cluster, seq) is None
    r = fill.run_fill(name, cluster, seq)
    assert r.allocated[-1] <= cluster.total_gpus and r.end.phi_star is not None
    if name == "sifopt":
        assert r.end.phi_pi == r.end.phi_star


def test_native_with_state_refuses_an_overfull_small_node() -> None:
    pol = make_policy("best-fit", 2, 8).on_capacities([8, 2])
    with pytest.raises(ValueError, match="exceeds its 2 GPUs"):
        pol.with_state(pol.placement()._replace(nodes=((), (Instance(0, 4),))))


def test_the_drain_moves_unconstrained_pods_off_the_node_a_constrained_one_needs() -> None:
    """A V100-only instance that fits on no V100 node as it is gets the V100 node the fewest
    migrations free (here one 4-GPU pod to the T4 node rather than two 2-GPU pods off the other
    V100 node); none when no V100 node can be freed."""
    from heuristics.gpu.model_repack import drain_with_models
    from oracle.gpu.plain_nodes import Move

    caps, models = [8, 8, 8], ["V100", "V100", "T4"]
    nodes = (((0, 4), (1, 4)), ((2, 2), (3, 2), (4, 2), (5, 2)), ())
    jm = {9: frozenset({"V100"})}
    (placement, moves, _), _ = drain_with_models(nodes, caps, models, jm, [(9, 4)], 1)
    assert moves == (Move(0, 4, 0, 2),) or moves == (Move(1, 4, 0, 2),)
    assert sorted(placement[0]) in ([(1, 4), (9, 4)], [(0, 4), (9, 4)]) and placement[1] == nodes[1]
    pinned = {**jm, **{j: frozenset({"V100"}) for j in range(6)}}  # no pod may leave the V100 nodes
    assert drain_with_models(nodes, caps, models, pinned, [(9, 4)], 1) == (None, False)

"""The minimum-migration repack with GPU models (``oracle.gpu.typed_repack``), cross-checked by
brute force (every instance-to-node assignment) and, without model sets, by ``min_migration_repack``."""
from __future__ import annotations

import random

import pytest

from oracle.gpu.min_migration import min_migration_repack
from oracle.gpu.plain_nodes import Item
from oracle.gpu.typed_repack import typed_repack, typed_repack_bruteforce
from oracle.result import Status


def _instance(rng: random.Random, constrained: bool) -> tuple[list[list[Item]], list[int], list[str],
                                                                dict[int, frozenset[str]], list[Item]]:
    """A tiny random cluster (≤ 4 nodes of 1..8 GPUs, models A/B) holding a valid placement."""
    caps = [rng.choice([2, 4, 8]) for _ in range(rng.randint(2, 4))]
    models = [rng.choice("AB") for _ in caps]
    nodes: list[list[Item]] = [[] for _ in caps]
    used = [0] * len(caps)
    job_models: dict[int, frozenset[str]] = {}
    for j in range(rng.randint(1, 4)):
        g, w = rng.choice([1, 1, 2, 4]), rng.choice([1, 1, 2])
        allowed = frozenset(rng.choice(["A", "B", "AB"])) if constrained and rng.random() < 0.6 else None
        spots = [n for n in range(len(caps)) for _ in range(w)]
        rng.shuffle(spots)
        chosen = []
        for n in spots:
            if len(chosen) < w and used[n] + g <= caps[n] and (allowed is None or models[n] in allowed):
                used[n] += g
                chosen.append(n)
        if len(chosen) < w:  # the job did not fit: take its instances back
            for n in chosen:
                used[n] -= g
            continue
        for n in chosen:
            nodes[n].append((j, g))
        if allowed is not None:
            job_models[j] = allowed
    new = [(9, rng.choice([1, 2]))] * rng.randint(0, 2)
    if constrained and new and rng.random() < 0.5:
        job_models[9] = frozenset(rng.choice("AB"))
    return nodes, caps, models, job_models, new


def test_typed_repack_is_the_brute_force_optimum() -> None:
    rng = random.Random(11)
    checked = moved = 0
    for _ in range(150):
        nodes, caps, models, jm, new = _instance(rng, constrained=True)
        if sum(len(n) for n in nodes) + len(new) > 7:
            continue
        cert = typed_repack(nodes, caps, models, jm, new)
        brute = typed_repack_bruteforce(nodes, caps, models, jm, new)
        if brute is None:
            assert cert.status is Status.INFEASIBLE
            continue
        assert cert.is_optimal and (cert.objective, cert.witness.gpus_moved) == brute
        placement = cert.witness.placement
        assert placement is not None and cert.witness.partial_after == cert.witness.target_partial
        for n, node in enumerate(placement):
            assert sum(g for _, g in node) <= caps[n]
            assert all(j not in jm or models[n] in jm[j] for j, _ in node)
        checked += 1
        moved += cert.objective > 0
    assert checked > 60 and moved > 5  # the sample is not all trivial


def test_without_model_sets_it_is_min_migration_repack() -> None:
    rng = random.Random(12)
    for _ in range(60):
        nodes, caps, models, _, new = _instance(rng, constrained=False)
        typed = typed_repack(nodes, caps, models, {}, new)
        plain = min_migration_repack(nodes, caps, new_items=new)
        assert typed.status == plain.status
        if plain.is_optimal:
            assert (typed.objective, typed.witness.gpus_moved) == (plain.objective, plain.witness.gpus_moved)


def test_an_instance_on_a_forbidden_node_is_refused() -> None:
    with pytest.raises(ValueError, match="node 1 .* forbid"):
        typed_repack([[], [(0, 2)]], [8, 8], ["A", "B"], {0: frozenset({"A"})})

"""``admit`` on snapshots with per-node ``capacities`` (docs/heterogeneous.md): answers against
the brute force, text and JSON for mixed nodes, the ``after`` snapshot read again, limits."""
from __future__ import annotations

import dataclasses
import json
import random

import oracle.gpu.min_migration as min_migration_mod
from oracle.gpu.repack_bruteforce import admit_bruteforce, repack_bruteforce
from oracle.gpu.repack_ilp import Columns
from oracle.result import Certificate, Status
from proofs_check.cli.admit import main as admit

SNAP = {"capacities": [8, 4, 4, 2, 1], "models": ["V100M32", "T4", "T4", "P100", "G2"],
        "placement": [[{"job": "a", "g": 1}], [{"job": "b", "g": 2}], [{"job": "c", "g": 2}],
                      [{"job": "d", "g": 1}], []]}


def write(tmp_path, snap, name="s.json"):
    p = tmp_path / name
    p.write_text(json.dumps(snap))
    return str(p)


def test_text_answer_on_mixed_nodes(tmp_path, capsys):
    path = write(tmp_path, SNAP)
    # An 8-GPU job fits only on the 8-GPU node: move job a's 1 GPU to the empty 1-GPU node.
    assert admit([path, "--job", "8x1"]) == 0
    out = capsys.readouterr().out
    assert "mixed capacities (1×8-GPU, 2×4-GPU, 1×2-GPU, 1×1-GPU; partial = below the node's own capacity)" in out
    assert "migrations: 1   GPUs moved: 1" in out and "move job a (1 GPUs): node 0 -> node 4" in out
    # Partial against each node's own capacity: a, b, c, d are partial (4); after, b, c, d.
    assert "partial nodes: 4 -> 3   empty nodes: 1 -> 0" in out
    assert admit([path, "--repack"]) == 0
    out = capsys.readouterr().out
    assert "repack to at most 0 partial node(s) (= Φ★)" in out and "migrations: 2   GPUs moved: 3" in out


def test_json_after_keeps_the_capacities_and_is_read_again(tmp_path, capsys):
    path = write(tmp_path, SNAP)
    assert admit([path, "--job", "4x2", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["question"]["capacities"] == [8, 4, 4, 2, 1] and (d["migrations"], d["gpus_moved"]) == (1, 1)
    after = d["after"]
    assert after["capacities"] == SNAP["capacities"] and after["models"] == SNAP["models"]
    assert sum(it["g"] for it in after["placement"][0]) == 8
    again = write(tmp_path, after, "after.json")
    assert admit([again, "--job", "2x2"]) == 0  # the 4-GPU nodes are half free: no migration
    assert "migrations: 0" in capsys.readouterr().out
    assert admit([again, "--job", "4x1"]) == 0  # a whole 4-GPU node: job c joins job b
    assert "move job c (2 GPUs): node 2 -> node 1" in capsys.readouterr().out


def test_answers_match_the_brute_force_on_random_mixed_snapshots(tmp_path, capsys):
    rng = random.Random(7)
    for k in range(12):
        caps = [rng.choice([1, 2, 4, 8]) for _ in range(rng.randint(2, 3))]
        nodes: list[list[dict]] = [[] for _ in caps]
        for j in range(rng.randint(0, 5)):
            n = rng.randrange(len(caps))
            room = caps[n] - sum(it["g"] for it in nodes[n])
            if room:
                nodes[n].append({"job": j, "g": rng.randint(1, room)})
        path = write(tmp_path, {"capacities": caps, "placement": nodes}, f"r{k}.json")
        plain = [[(it["job"], it["g"]) for it in node] for node in nodes]
        g = rng.randint(1, max(caps))
        want = admit_bruteforce(plain, caps, g, 1)
        code = admit([path, "--job", f"{g}x1", "--json"])
        d = json.loads(capsys.readouterr().out)
        assert code == (1 if want is None else 0)
        if want is not None:
            assert (d["migrations"], d["gpus_moved"]) == want
        want = repack_bruteforce(plain, caps)
        assert admit([path, "--repack", "--json"]) == 0
        d = json.loads(capsys.readouterr().out)
        assert (d["migrations"], d["gpus_moved"]) == want


def test_job_sizes_up_to_the_largest_node_and_impossible_jobs(tmp_path, capsys):
    path = write(tmp_path, {"capacities": [4, 2], "placement": [[], []]})
    assert admit([path, "--job", "8x1"]) == 2
    assert "--job: g=8 outside 1..4" in capsys.readouterr().err
    assert admit([path, "--job", "4x2"]) == 1  # one 4-GPU node only
    assert "impossible" in capsys.readouterr().out


def test_a_limit_hit_is_inconclusive(tmp_path, capsys, monkeypatch):
    unknown: Certificate = Certificate(Status.UNKNOWN, None, None, (), "stub", "0", 0.0)
    monkeypatch.setattr(min_migration_mod, "phi_star_mixed", lambda *a, **k: unknown)
    assert admit([write(tmp_path, SNAP), "--repack"]) == 3
    out = capsys.readouterr().out
    assert "Φ★ not proven" in out and "unknown" in out


def test_an_unproven_incumbent_is_printed_as_unproven(tmp_path, capsys, monkeypatch):
    # The ILP stops at its limit with an incumbent (simulated: the real answer, downgraded).
    solve = min_migration_mod.BACKENDS["cp-sat"]

    def limit_hit(m, time_limit):
        raw = solve(m, time_limit)
        return dataclasses.replace(raw, status=Status.FEASIBLE, bound=0, witness=Columns(raw.witness.values, False))

    monkeypatch.setitem(min_migration_mod.BACKENDS, "cp-sat", limit_hit)
    assert admit([write(tmp_path, SNAP), "--job", "8x1"]) == 3
    out = capsys.readouterr().out
    assert "status: feasible" in out and "[NOT proven optimal; proven lower bound 0]" in out

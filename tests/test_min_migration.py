"""The minimum-migration oracle against an instance-level brute force, and its certificates."""
from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle.gpu.min_migration import (
    admit_bruteforce,
    min_migration_repack,
    min_migrations_to_admit,
    normalise,
    partial_count,
    repack_bruteforce,
)
from oracle.gpu.phi_star import phi_star_bruteforce
from oracle.result import Status

G = 8


@st.composite
def placements(draw, max_nodes: int = 3, max_items: int = 6, capacity: int = G):
    """Tiny valid placements; jobs are keyed by g so a job's instances share their demand."""
    n_nodes = draw(st.integers(1, max_nodes))
    budget = draw(st.integers(0, max_items))
    nodes: list[list[tuple[int, int]]] = [[] for _ in range(n_nodes)]
    for _ in range(budget):
        n = draw(st.integers(0, n_nodes - 1))
        room = capacity - sum(g for _, g in nodes[n])
        if room == 0:
            continue
        g = draw(st.integers(1, room))
        nodes[n].append((10 * g + draw(st.integers(0, 1)), g))
    return nodes


def check_certificate(cert, current, new_items=()):
    """The target placement holds exactly the old plus new instances, fits, and the moves and
    admissions turn ``current`` into it; the reported counts are the placement's."""
    nodes = normalise(current, G)
    r = cert.witness
    assert r.placement is not None and len(r.placement) == len(nodes)
    assert all(sum(g for _, g in node) <= G for node in r.placement)
    want = Counter(i for node in nodes for i in node) + Counter(new_items)
    assert Counter(i for node in r.placement for i in node) == want
    rebuilt = [Counter(node) for node in nodes]
    for m in r.moves:
        assert m.src != m.dst
        rebuilt[m.src][(m.job, m.g)] -= 1
        rebuilt[m.dst][(m.job, m.g)] += 1
    for a in r.admitted:
        rebuilt[a.dst][(a.job, a.g)] += 1
    assert [+c for c in rebuilt] == [Counter(node) for node in r.placement]
    assert cert.objective == len(r.moves)
    assert r.gpus_moved == sum(m.g for m in r.moves)
    assert r.partial_after == partial_count(r.placement, G)
    assert r.partial_before == partial_count(nodes, G)
    assert r.empty_after == sum(1 for node in r.placement if not node)


def check_matches_bruteforce(cert, brute, current, new_items=()):
    """``cert`` is infeasible exactly when the brute force (``brute``: (migrations, GPUs moved)
    or None) finds no packing; otherwise it is optimal, a valid certificate and equal to it."""
    if brute is None:
        assert cert.status is Status.INFEASIBLE
        return
    assert cert.is_optimal
    check_certificate(cert, current, new_items)
    assert (cert.objective, cert.witness.gpus_moved) == brute


@settings(max_examples=60, deadline=None)
@given(placements())
def test_repack_to_phi_star_matches_bruteforce(current):
    cert = min_migration_repack(current, G)
    assert cert.is_optimal
    check_certificate(cert, current)
    counts = normalise(current, G)
    demands = Counter(g for node in counts for _, g in node)
    phi = phi_star_bruteforce(tuple(demands.get(g, 0) for g in range(1, G + 1)), len(current), G)
    r = cert.witness
    assert r.target_partial == phi.objective and r.partial_after == phi.objective
    assert (cert.objective, r.gpus_moved) == repack_bruteforce(current, G)
    assert cert.bound == cert.objective and r.gpus_proven


@settings(max_examples=40, deadline=None)
@given(placements(), st.integers(0, 3))
def test_repack_to_given_target_matches_bruteforce(current, target):
    cert = min_migration_repack(current, G, target_partial=target)
    check_matches_bruteforce(cert, repack_bruteforce(current, G, target_partial=target), current)
    if cert.is_optimal:
        assert cert.witness.partial_after <= target


@settings(max_examples=60, deadline=None)
@given(placements(max_items=5), st.integers(1, G), st.integers(1, 2))
def test_admit_matches_bruteforce(current, g, w):
    cert = min_migrations_to_admit(current, G, g, w, job_id=99)
    check_matches_bruteforce(cert, admit_bruteforce(current, G, g, w), current, [(99, g)] * w)
    if cert.status is Status.INFEASIBLE:
        assert cert.witness.placement is None
    else:
        assert sorted(a.g for a in cert.witness.admitted) == [g] * w


@settings(max_examples=25, deadline=None)
@given(placements(max_items=5), st.integers(1, G))
def test_repack_with_a_new_job_matches_bruteforce(current, g):
    new = [(99, g)]
    cert = min_migration_repack(current, G, new_items=new)
    check_matches_bruteforce(cert, repack_bruteforce(current, G, new_items=new), current, new)


def random_fragmented(n_nodes: int, seed: int) -> list[list[tuple[int, int]]]:
    """A first-fit placement of random jobs, then random departures (a fragmented cluster)."""
    rng = random.Random(seed)
    nodes: list[list[tuple[int, int]]] = [[] for _ in range(n_nodes)]
    for job in range(6 * n_nodes):
        g = rng.choice([1, 1, 1, 2, 3, 4, 6, 8])
        n = next((i for i, node in enumerate(nodes) if sum(x for _, x in node) + g <= G), None)
        if n is not None:
            nodes[n].append((job, g))
    for node in nodes:
        for item in list(node):
            if rng.random() < 0.3:
                node.remove(item)
    return nodes


@pytest.mark.parametrize("seed", range(4))
def test_cpsat_and_highs_agree_on_medium_clusters(seed):
    current = random_fragmented(16, seed)
    a = min_migration_repack(current, G)
    b = min_migration_repack(current, G, solver="highs")
    assert a.is_optimal and b.is_optimal
    check_certificate(a, current)
    check_certificate(b, current)
    assert (a.objective, a.witness.gpus_moved, a.witness.partial_after) == \
        (b.objective, b.witness.gpus_moved, b.witness.partial_after)
    adm_a = min_migrations_to_admit(current, G, 8, 2)
    adm_b = min_migrations_to_admit(current, G, 8, 2, solver="highs")
    assert adm_a.status == adm_b.status
    assert (adm_a.objective, adm_a.witness.gpus_moved) == (adm_b.objective, adm_b.witness.gpus_moved)


def test_admit_is_zero_when_the_job_fits_and_infeasible_beyond_capacity():
    current = [[(1, 4)], [(2, 4)], [(3, 2)], []]
    fits = min_migrations_to_admit(current, G, 4, 2)
    assert (fits.status, fits.objective) == (Status.OPTIMAL, 0)
    # Two empty nodes are needed: moving the 2 (2 GPUs) beats moving a 4 (4 GPUs).
    needs_one = min_migrations_to_admit(current, G, 8, 2)
    assert (needs_one.status, needs_one.objective, needs_one.witness.gpus_moved) == (Status.OPTIMAL, 1, 2)
    too_big = min_migrations_to_admit(current, G, 8, 3)
    assert too_big.status is Status.INFEASIBLE and too_big.objective is None


def test_repack_prefers_moving_fewer_gpus_among_equal_migration_counts():
    # Φ★ = 0 needs one move: moving the 1 (1 GPU) or the 7 (7 GPUs) merges the two partial
    # nodes; the secondary objective picks the 1.
    current = [[(1, 7)], [(2, 1)]]
    cert = min_migration_repack(current, G)
    assert (cert.objective, cert.witness.gpus_moved, cert.witness.partial_after) == (1, 1, 0)


def test_node_limit_pads_with_empty_nodes():
    current = [[(1, 4)], [(2, 4)]]
    cert = min_migration_repack(current, G, n_nodes=4)
    r = cert.witness
    assert r.placement is not None and len(r.placement) == 4 and r.empty_before == 2 and r.empty_after == 3


@pytest.mark.parametrize("current, msg", [
    ([[(1, 9)]], "g=9 outside"),
    ([[(1, 4), (2, 5)]], "9 GPUs used > capacity"),
    ([[(1, 4)], [(1, 2)]], "job 1 has g=2 but g=4"),
])
def test_bad_input_names_the_node_and_field(current, msg):
    with pytest.raises(ValueError, match=msg):
        min_migration_repack(current, G)


def test_bad_solver_and_job_shape_are_refused():
    with pytest.raises(ValueError, match="unknown solver"):
        min_migration_repack([[(1, 1)]], G, solver="cbc")
    with pytest.raises(ValueError, match="outside 1..8"):
        min_migrations_to_admit([[(1, 1)]], G, 9, 1)
    with pytest.raises(ValueError, match="n_nodes=1 <"):
        min_migration_repack([[(1, 1)], []], G, n_nodes=1)


# --------------------------------------------------------------------------------------------
# The `admit` CLI

SNAPSHOT = {"capacity": 8, "placement": [[{"job": 1, "g": 4}], [{"job": 2, "g": 4}],
                                         [{"job": 3, "g": 2}], []]}


def run_admit(tmp_path, capsys, snapshot, *args):
    import json

    from proofs_check.cli.admit import main

    path = tmp_path / "snap.json"
    path.write_text(snapshot if isinstance(snapshot, str) else json.dumps(snapshot))
    code = main([str(path), *args])
    out, err = capsys.readouterr()
    return code, out, err, str(path)


def test_admit_cli_answers_the_job_question(tmp_path, capsys):
    import json

    code, out, _, _ = run_admit(tmp_path, capsys, SNAPSHOT, "--job", "8x2", "--json")
    res = json.loads(out)
    assert code == 0 and res["status"] == "optimal"
    assert (res["migrations"], res["gpus_moved"]) == (1, 2)  # moving the 2 frees a node
    assert [m["job"] for m in res["moves"]] == [3] and len(res["admitted"]) == 2
    code, out, _, _ = run_admit(tmp_path, capsys, SNAPSHOT, "--job", "8x3")
    assert code == 1 and "impossible" in out


def test_admit_cli_repack_reports_cost_and_value(tmp_path, capsys):
    code, out, _, _ = run_admit(tmp_path, capsys, SNAPSHOT, "--repack")
    assert code == 0
    assert "migrations: 1   GPUs moved: 4" in out  # Φ★ = 1: the two 4s must share a node
    assert "partial nodes: 3 -> 1   empty nodes: 1 -> 2" in out


@pytest.mark.parametrize("snapshot, args, field", [
    ({"placement": [[{"job": 1, "g": 9}]]}, ["--repack"], "placement[0][0].g"),
    ({"placement": [[{"job": 1}]]}, ["--repack"], "placement[0][0]"),
    ({"placement": [[{"job": 1, "g": 4}, {"job": 2, "g": 6}]]}, ["--repack"], "node 0"),
    ({"placement": [], "gpus": 8}, ["--repack"], "field 'gpus': unknown field"),
    ({"placement": [[]], "nodes": 0}, ["--repack"], "nodes"),
    ('{"placement": [', ["--repack"], "invalid JSON"),
    (SNAPSHOT, ["--job", "4y2"], "--job"),
    (SNAPSHOT, ["--job", "9x1"], "--job: g=9"),
    (SNAPSHOT, ["--job", "4x1", "--job-id", "2"], "--job-id: job 2 is already placed"),
])
def test_admit_cli_bad_input_is_one_line_exit_2(tmp_path, capsys, snapshot, args, field):
    code, out, err, path = run_admit(tmp_path, capsys, snapshot, *args)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and field in err
    if not args[0].startswith("--job"):
        assert path in err

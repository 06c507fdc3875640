"""The minimum-migration oracle against an instance-level brute force, and its certificates."""
from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import oracle.gpu.min_migration as min_migration_mod
from oracle.gpu.min_migration import SHORTCUT_SOLVER, min_migration_repack, min_migrations_to_admit
from oracle.gpu.plain_nodes import normalise, partial_count
from oracle.gpu.repack_bruteforce import admit_bruteforce, repack_bruteforce
from oracle.gpu.repack_ilp import BACKENDS, build_model
from oracle.gpu.patterns import witness_violations
from oracle.gpu.phi_bound import certified_phi_star, nodes_lower_bound, quick_phi_star
from oracle.gpu.phi_star import min_nodes_bruteforce, phi_star_bruteforce
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
    """The default path (shortcuts, deepening, CP-SAT) against HiGHS on the unrestricted model."""
    current = random_fragmented(16, seed)
    a = min_migration_repack(current, G)
    b = min_migration_repack(current, G, solver="highs", shortcuts=False)
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


# --------------------------------------------------------------------------------------------
# The fast paths (issue 15): Φ★ by the BFD certificate, the one-move search, budget deepening


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=G, max_size=G), st.integers(1, 6))
def test_bfd_certificate_matches_bruteforce_phi_star(counts, n_nodes):
    counts = tuple(counts)
    brute = phi_star_bruteforce(counts, n_nodes, G)
    quick = quick_phi_star(counts, n_nodes, G)
    assert (quick.status, quick.objective) == (brute.status, brute.objective)
    assert nodes_lower_bound(counts, G) <= min_nodes_bruteforce(counts, None, G).objective
    cert = certified_phi_star(counts, n_nodes, G)
    if cert is not None and cert.status is Status.INFEASIBLE:
        assert brute.status is Status.INFEASIBLE
    elif cert is not None:
        assert cert.is_optimal and cert.objective == brute.objective
        assert witness_violations(cert.witness, counts, n_nodes, G) == []


def test_bfd_certificate_settles_large_gfs_like_counts_and_declines_others():
    cert = certified_phi_star((301, 20, 0, 15, 0, 0, 0, 60), 200, G)
    assert cert is not None and cert.objective == 1 and cert.solver == "bfd-bound"
    assert certified_phi_star((0, 0, 0, 0, 3, 0, 0, 0), 8, G) is None  # Φ★ = 3 > parity bound 1
    assert certified_phi_star((0, 0, 0, 0, 3, 0, 0, 0), 2, G).status is Status.INFEASIBLE  # three 5s, N = 2
    assert certified_phi_star((0, 0, 0, 2, 0, 0, 0, 0), 1, G).objective == 0  # [4 4] fills N = 1
    assert certified_phi_star((0, 0, 3, 0, 0, 0, 0, 0), 2, G) is None  # BFD: [3 3] [3]; L2 = 2


@settings(max_examples=60, deadline=None)
@given(placements(max_nodes=3, max_items=6), st.integers(0, 2))
def test_lower_bound_never_exceeds_the_brute_force_minimum(current, extra):
    nodes = normalise(current, G)
    new = ((99, 1),) * extra
    brute = repack_bruteforce(current, G, new_items=new)
    if brute is not None:
        phi = quick_phi_star(min_migration_mod.instance_counts(nodes, new, G), len(nodes), G).objective
        if not new and min_migration_mod._shortcut(nodes, G, phi, 0.0) is not None:
            return  # the bound's "at least 2" presumes the search found no 0- or 1-move repack
        assert min_migration_mod._lower_bound(nodes, G, new, phi) <= brute[0]


@settings(max_examples=40, deadline=None)
@given(placements(max_nodes=3, max_items=6), st.integers(0, 3), st.sampled_from(sorted(BACKENDS)))
def test_budget_level_is_infeasible_exactly_below_the_brute_force_minimum(current, budget, backend):
    nodes = normalise(current, G)
    brute = repack_bruteforce(current, G)
    phi = quick_phi_star(min_migration_mod.instance_counts(nodes, (), G), len(nodes), G).objective
    raw = BACKENDS[backend](build_model(nodes, G, (), phi, budget=budget), 10.0)
    if brute[0] > budget:
        assert raw.status is Status.INFEASIBLE
    else:
        assert raw.is_optimal and raw.objective <= budget


def sifopt_like_states(n_nodes: int, seeds: range):
    """Placements one departure away from Φ★: a fragmented cluster repacked to Φ★ (unrestricted
    model), then one random job removed — what SIFOpt repacks after a departure."""
    for seed in seeds:
        rng = random.Random(seed)
        at_phi = min_migration_repack(random_fragmented(n_nodes, seed), G, shortcuts=False).witness.placement
        jobs = sorted({j for node in at_phi for j, _ in node})
        for gone in rng.sample(jobs, min(3, len(jobs))):
            yield [[i for i in node if i[0] != gone] for node in at_phi]


def test_fast_paths_match_the_unrestricted_model_after_departures():
    """Same (status, migrations, GPUs moved) with and without the shortcut and deepening, both
    certificates valid; the states exercise the one-move search and the ILP levels."""
    paths = Counter()
    for current in sifopt_like_states(12, range(4)):
        fast = min_migration_repack(current, G)
        full = min_migration_repack(current, G, shortcuts=False)
        assert fast.is_optimal and full.is_optimal
        check_certificate(fast, current)
        assert (fast.objective, fast.witness.gpus_moved, fast.witness.partial_after) == \
            (full.objective, full.witness.gpus_moved, full.witness.partial_after)
        paths["search" if fast.solver == SHORTCUT_SOLVER else "ilp"] += 1
    assert paths["search"] > 0 and paths["ilp"] > 0


@pytest.mark.parametrize("seed", range(3))
def test_fast_paths_match_the_unrestricted_model_with_new_instances(seed):
    current = random_fragmented(12, seed)
    new = [(99, 4), (99, 4)]
    fast = min_migration_repack(current, G, new_items=new)
    full = min_migration_repack(current, G, new_items=new, shortcuts=False)
    assert fast.status == full.status
    if fast.is_optimal:
        check_certificate(fast, current, new)
        assert (fast.objective, fast.witness.gpus_moved) == (full.objective, full.witness.gpus_moved)

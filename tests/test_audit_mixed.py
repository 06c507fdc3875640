"""verify --audit on mixed node capacities (docs/heterogeneous.md): in every log format a node is
partial when non-empty and below its own capacity, Φ★ is the mixed Φ★ and SIF = (Φπ − Φ★)/N;
the three formats agree on the same mixed history, and both Φπ and Φ★ are checked against an
independent recomputation (per-node loads by hand, Φ★ by exhaustive search)."""
import json
import random
from fractions import Fraction

import pytest

from oracle.gpu.mixed_phi import MixedProblem, mixed_bruteforce
from proofs_check.cli.verify import main
from proofs_check.core.verdict import Verdict
from proofs_check.gpu.audit import AuditError, audit_path, parse_bound

# The snapshot of tests/test_admit_mixed.py: one instance of 1 GPU on the 8-GPU node, 2 on each
# 4-GPU node, 1 on the 2-GPU node. Per node's own capacity all four used nodes are partial and
# Φ★ = 0 (2+2 fill a 4-GPU node, 1+1 the 2-GPU node); read as five 8-GPU nodes Φ★ would be 1.
SNAP = {"capacities": [8, 4, 4, 2, 1], "models": ["V100M32", "T4", "T4", "P100", "G2"],
        "placement": [[{"job": "a", "g": 1}], [{"job": "b", "g": 2}], [{"job": "c", "g": 2}],
                      [{"job": "d", "g": 1}], []]}


def write(tmp_path, lines, name="log.jsonl"):
    p = tmp_path / name
    p.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return str(p)


def audit(path, bound="2", nodes=None):
    return audit_path(path, parse_bound(bound), "auto", nodes)


def test_snapshot_with_capacities_uses_each_nodes_own_capacity(tmp_path):
    (valid, sif), text = audit(write(tmp_path, [SNAP]), "3")  # bound 3/5
    assert valid.verdict == Verdict.HOLDS and sif.verdict == Verdict.VIOLATED
    assert {k: sif.counterexample[k] for k in ("N", "Φπ", "Φ★", "SIF")} == {"N": 5, "Φπ": 4, "Φ★": 0, "SIF": "4/5"}
    assert sif.counterexample["counts"] == [2, 2, 0, 0, 0, 0, 0, 0]
    # Full small nodes are not partial: Φπ = 0 where eight-GPU nodes would give 3.
    full = {"capacities": [8, 4, 2, 1], "placement": [[], [{"g": 4}], [{"g": 2}], [{"g": 1}]]}
    (_, sif), _ = audit(write(tmp_path, [full], "full.jsonl"), "0")
    assert sif.verdict == Verdict.HOLDS and sif.stats["worst SIF"] == "0"


def test_models_and_equal_capacities(tmp_path):
    """Models change nothing (no audited instance names a model set); a list of equal capacities
    is that one capacity (the counts are n_1..n_4, not n_1..n_8)."""
    without = {k: v for k, v in SNAP.items() if k != "models"}
    r1, _ = audit(write(tmp_path, [SNAP], "a.jsonl"), "0")
    r2, _ = audit(write(tmp_path, [without], "b.jsonl"), "0")
    assert r1[1].counterexample | {"file": ""} == r2[1].counterexample | {"file": ""}
    nodes = [[{"g": 3}], [{"g": 3}], [{"g": 1}, {"g": 1}]]
    r3, _ = audit(write(tmp_path, [{"capacities": [4, 4, 4], "placement": nodes}], "c.jsonl"), "0")
    r4, _ = audit(write(tmp_path, [{"capacity": 4, "nodes": 3, "placement": nodes}], "d.jsonl"), "0")
    assert r3[1].counterexample | {"file": ""} == r4[1].counterexample | {"file": ""}
    assert r3[1].counterexample["counts"] == [2, 0, 2, 0] and (r3[1].counterexample["Φπ"], r3[1].counterexample["Φ★"]) == (3, 0)


def test_random_snapshots_against_recomputation(tmp_path):
    rng = random.Random(11)
    for k in range(25):
        caps = [rng.choice([1, 2, 4, 8]) for _ in range(rng.randint(2, 5))]
        nodes = []
        for c in caps:
            node, free = [], c
            while free and rng.random() < 0.6:
                g = rng.choice([g for g in (1, 2, 4, 8) if g <= free])
                node.append({"g": g})
                free -= g
            nodes.append(node)
        (valid, sif), _ = audit(write(tmp_path, [{"capacities": caps, "placement": nodes}], f"r{k}.jsonl"), "0")
        phi_pi, star, counts = expected(caps, [[i["g"] for i in node] for node in nodes])
        value = Fraction(phi_pi - star, len(caps))
        assert valid.verdict == Verdict.HOLDS
        if value > 0:
            assert (sif.counterexample["Φπ"], sif.counterexample["Φ★"], sif.counterexample["counts"]) == (phi_pi, star, counts)
        else:
            assert sif.verdict == Verdict.HOLDS and sif.stats["worst SIF"] == "0"


# ------------------------------------------------------------------ one mixed history, three formats


def expected(caps, loads):
    """(Φπ, Φ★, counts) of per-node instance demands ``loads``, recomputed independently."""
    used = [sum(node) for node in loads]
    counts = [sum(g == d for node in loads for g in node) for d in range(1, max(caps) + 1)]
    star = mixed_bruteforce(MixedProblem.of(caps, counts)).objective
    return sum(0 < u < c for u, c in zip(used, caps)), star, counts


def mixed_run(seed, caps, events=40, widths=(1,)):
    """(kind, job, g, hosts, per-node demands after) of a random placement on ``caps`` (each
    instance on a random node with room, so partial nodes are left behind)."""
    rng = random.Random(seed)
    free, running, out = list(caps), {}, []
    for k in range(events):
        if running and rng.random() < 0.4:
            job = rng.choice(sorted(running))
            g, hosts = running.pop(job)
            kind = "depart"
        else:
            g, hosts = rng.choice([1, 1, 2, 2, 4, 8]), []
            for _ in range(rng.choice(widths)):
                room = [n for n in range(len(caps)) if free[n] - hosts.count(n) * g >= g]
                if not room:
                    break
                hosts.append(rng.choice(room))
            if not hosts:
                continue
            job, kind = f"j{k}", "arrive"
            running[job] = (g, hosts)
        for n in hosts:
            free[n] += g if kind == "depart" else -g
        loads = [[jg for _, (jg, hs) in sorted(running.items()) for h in hs if h == n] for n in range(len(caps))]
        names = [[j for j, (jg, hs) in sorted(running.items()) for h in hs if h == n] for n in range(len(caps))]
        out.append((kind, job, g, tuple(hosts), loads, names))
    return out


def three_logs(tmp_path, caps, run):
    models = [f"m{c}" for c in caps]
    snap, delta, binds = [], [{"format": "delta", "capacities": caps, "models": models}], ["time,event,pod,node,gpus"]
    for t, (kind, job, g, hosts, loads, names) in enumerate(run):
        line = {"event": kind, "job": job} | ({"g": g, "w": len(hosts)} if kind == "arrive" else {})
        placement = [[{"job": j, "g": d} for j, d in zip(ns, ls)] for ns, ls in zip(names, loads)]
        snap.append(line | {"capacities": caps, "models": models, "placement": placement})
        delta.append(line | ({"hosts": list(hosts)} if kind == "arrive" else {}))
        if t % 7 == 6:
            delta.append({"event": "snapshot", "capacities": caps, "placement": placement})
        for i, n in enumerate(hosts):
            binds.append(f"{t},bind,{job}-{i},n{n},{g}" if kind == "arrive" else f"{t},delete,{job}-{i},,")
    nodes = write(tmp_path, ["node,gpus"] + [f"n{n},{c}" for n, c in enumerate(caps)], "nodes.csv")
    return write(tmp_path, snap, "snap.jsonl"), write(tmp_path, delta, "delta.jsonl"), write(tmp_path, binds, "b.csv"), nodes


@pytest.mark.parametrize("seed,caps,widths", [(1, [8, 4, 4, 2, 1], (1,)), (2, [8, 8, 4, 2, 2, 1], (1,)),
                                              (3, [8, 4, 4, 2, 1], (1, 1, 2))])
def test_three_formats_agree_on_a_mixed_history(tmp_path, seed, caps, widths):
    run = mixed_run(seed, caps, widths=widths)
    assert any(0 < c < max(caps) and sum(loads[n]) == c for *_, loads, _ in run for n, c in enumerate(caps))
    truth = [expected(caps, loads) for *_, loads, _ in run]
    sifs = [Fraction(pi - star, len(caps)) for pi, star, _ in truth]
    snap, delta, binds, nodes = three_logs(tmp_path, caps, run)
    for bound in ("2", "1/8"):
        rs, _ = audit(snap, bound)
        assert rs[0].verdict == Verdict.HOLDS and rs[1].stats["worst SIF"] == str(max(sifs))
        first = next((t for t, v in enumerate(sifs) if v > parse_bound(bound).at(len(caps))), None)
        assert bound != "1/8" or first is not None  # so a counterexample is compared too
        assert rs[1].verdict == (Verdict.HOLDS if first is None else Verdict.VIOLATED)
        if first is not None:
            assert rs[1].counterexample["line"] == first + 1
            assert (rs[1].counterexample["Φπ"], rs[1].counterexample["Φ★"], rs[1].counterexample["counts"]) == truth[first]
        rd, text = audit(delta, bound)
        assert "mixed capacities" in text and rd[1].stats["snapshot lines"] == len(run) // 7
        assert [r.verdict for r in rd] == [r.verdict for r in rs] and rd[1].stats["worst SIF"] == rs[1].stats["worst SIF"]
        rb, _ = audit(binds, bound, nodes=nodes)
        assert rb[0].verdict == Verdict.HOLDS
        for key in ("Φπ", "Φ★", "SIF", "counts", "N"):
            assert rd[1].counterexample is None or rd[1].counterexample[key] == rs[1].counterexample[key]
            if widths == (1,):  # one record per event: the same states
                assert rb[1].counterexample is None or rb[1].counterexample[key] == rs[1].counterexample[key]
        if widths == (1,):
            assert [r.verdict for r in rb] == [r.verdict for r in rs] and rb[1].stats["worst SIF"] == rs[1].stats["worst SIF"]


def test_over_capacity_is_the_same_finding_in_every_format(tmp_path):
    """Two 3-GPU instances on a 4-GPU node (each fits, together they do not)."""
    caps = [8, 4]
    snap = write(tmp_path, [{"event": "arrive", "job": "a", "g": 3, "w": 1, "capacities": caps, "placement": [[], [{"job": "a", "g": 3}]]},
                            {"event": "arrive", "job": "b", "g": 3, "w": 1, "capacities": caps,
                             "placement": [[], [{"job": "a", "g": 3}, {"job": "b", "g": 3}]]}], "s.jsonl")
    delta = write(tmp_path, [{"format": "delta", "capacities": caps}, {"event": "arrive", "job": "a", "g": 3, "hosts": [1]},
                             {"event": "arrive", "job": "b", "g": 3, "hosts": [1]}], "d.jsonl")
    nodes = write(tmp_path, ["node,gpus", "0,8", "1,4"], "nodes.csv")
    binds = write(tmp_path, ["event,pod,node,gpus", "bind,a,1,3", "bind,b,1,3"], "b.csv")
    for path, line in ((snap, 2), (delta, 3), (binds, 3)):
        (valid, _), _ = audit(path, nodes=nodes if path == binds else None)
        assert valid.verdict == Verdict.VIOLATED and valid.counterexample["line"] == line
        assert valid.counterexample["problems"] == ["node 1: 6 GPUs used > capacity 4"]


# ------------------------------------------------------------------ bad input: exit 2, one line


HEAD = {"format": "delta", "capacities": [8, 4]}


@pytest.mark.parametrize("lines,name,where", [
    ([{"capacities": [8, 0], "placement": [[]]}], "s.jsonl", "s.jsonl:1: field 'capacities[1]': 0 must be >= 1"),
    ([{"capacities": [8, 4], "placement": [[], [{"job": "a", "g": 6}]]}], "s.jsonl",
     "s.jsonl:1: field 'placement[1][0].g': an instance of 6 GPUs on node 1, which has 4"),
    ([SNAP, {"capacities": [8, 4], "placement": [[], [], []]}], "s.jsonl",
     "s.jsonl:2: field 'capacities': 2 entries for the 3 nodes listed in 'placement'"),
    ([{"capacities": [8, 4, 2], "nodes": 2, "placement": [[]]}], "s.jsonl", "s.jsonl:1: field 'capacities': 3 entries for 2 nodes"),
    ([{"format": "delta", "capacities": [8, -1]}], "d.jsonl", "d.jsonl:1: field 'capacities[1]': -1 must be >= 1"),
    ([{"format": "delta", "capacities": [8, 4], "models": ["x"]}], "d.jsonl", "d.jsonl:1: field 'models': must be a list of 2"),
    ([{"format": "delta", "nodes": 2, "models": ["x", "y"]}], "d.jsonl", "d.jsonl:1: field 'models': only with 'capacities'"),
    ([HEAD, {"event": "arrive", "job": "a", "g": 6, "hosts": [0, 1]}], "d.jsonl",
     "d.jsonl:2: field 'g': an instance of 6 GPUs on node 1, which has 4"),
    ([HEAD, {"event": "snapshot", "placement": [[], [{"job": "a", "g": 6}]]}], "d.jsonl",
     "d.jsonl:2: field 'placement[1][0].g': an instance of 6 GPUs on node 1, which has 4"),
    ([HEAD, {"event": "snapshot", "capacities": [8, 4, 2], "placement": [[]]}], "d.jsonl",
     "d.jsonl:2: field 'capacities': differs from the cluster the header declares"),
    ([HEAD, {"event": "snapshot", "models": ["x", "y"], "placement": [[]]}], "d.jsonl",
     "d.jsonl:2: field 'models': differs from the cluster the header declares"),
    (["event,pod,node,gpus", "bind,a,big,1", "bind,b,small,6"], "b.csv",
     "b.csv:3: field 'gpus': an instance of 6 GPUs on node small, which has 4"),
])
def test_bad_mixed_input_is_one_line_exit_2(tmp_path, capsys, lines, name, where):
    args = ["--audit", write(tmp_path, lines, name)]
    if name == "b.csv":
        args += ["--nodes-file", write(tmp_path, ["node,gpus", "big,8", "small,4"], "nodes.csv")]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and where in err, err
    with pytest.raises(AuditError):
        audit(args[1], nodes=args[3] if name == "b.csv" else None)

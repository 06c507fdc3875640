"""verify --audit on delta logs and Kubernetes-style binding streams: the same claims as the
snapshot log (valid, SIF ≤ bound at every line), the state rebuilt incrementally."""
import json
import random
from collections import Counter

import pytest

from heuristics.gpu.baselines import NodeRulePolicy
from heuristics.gpu.cluster import Job
from oracle.gpu.mixed_phi import MixedProblem, mixed_bruteforce
from oracle.gpu.phi_star import phi_star_bruteforce
from oracle.result import Unproven
from proofs_check.cli.verify import main
from proofs_check.core.verdict import Verdict
from proofs_check.gpu.audit import AuditError, audit_path, detect_format, parse_bound
from proofs_check.gpu import audit_tally
from proofs_check.gpu.audit_tally import Cluster, exact_phi_star
from proofs_check.gpu.rebuilt_state import RebuiltState, Slot


def write(tmp_path, lines, name="log.jsonl"):
    p = tmp_path / name
    p.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return str(p)


def header(nodes=2, capacity=8):
    return {"format": "delta", "nodes": nodes, "capacity": capacity}


def audit(path, bound="2", fmt="auto", nodes=None):
    return audit_path(path, parse_bound(bound), fmt, nodes)


# ------------------------------------------------------------------ the same run, three formats


def best_fit_run(seed, n_nodes=4, events=60, widths=(1, 1, 2)):
    """(kind, job, hosts, placement after) of a small best-fit run."""
    rng = random.Random(seed)
    policy = NodeRulePolicy("best-fit", n_nodes)
    running, out, k = [], [], 0
    for _ in range(events):
        job = Job(k, rng.choice([1, 1, 2, 3, 4, 8]), rng.choice(widths))
        if rng.random() < 0.6 and policy.arrive(job).ok:
            k += 1
            running.append(job)
            p = policy.placement()
            out.append(("arrive", job, tuple(n for n, node in enumerate(p.nodes) for i in node if i.job == job.id), p))
        elif running:
            gone = running.pop(rng.randrange(len(running)))
            policy.depart(gone.id)
            out.append(("depart", gone, (), policy.placement()))
    return out


def three_logs(tmp_path, run, n_nodes=4):
    snap, delta, binds = [], [header(n_nodes)], ["time,event,pod,node,gpus"]
    for t, (kind, job, hosts, p) in enumerate(run):
        line = {"event": kind, "job": job.id} | ({"g": job.g, "w": job.w} if kind == "arrive" else {})
        placement = [[{"job": i.job, "g": i.g} for i in node] for node in p.nodes]
        snap.append(line | {"nodes": n_nodes, "placement": placement})
        delta.append(line | ({"hosts": list(hosts)} if kind == "arrive" else {}))
        if t % 7 == 6:
            delta.append({"event": "snapshot", "placement": placement})
        for i in range(job.w):
            binds.append(f"{t},bind,p{job.id}-{i},n{hosts[i]},{job.g}" if kind == "arrive" else f"{t},delete,p{job.id}-{i},,")
    nodes = write(tmp_path, ["node,gpus"] + [f"n{n},8" for n in range(n_nodes)], "nodes.csv")
    return write(tmp_path, snap, "snap.jsonl"), write(tmp_path, delta, "delta.jsonl"), write(tmp_path, binds, "b.csv"), nodes


@pytest.mark.parametrize("seed,widths", [(1, (1, 1, 2)), (2, (1, 1, 2)), (3, (1,))])
def test_delta_log_agrees_with_snapshot_log(tmp_path, seed, widths):
    run = best_fit_run(seed, widths=widths)
    snap, delta, binds, nodes = three_logs(tmp_path, run)
    for bound in ("2", "1/8"):
        rs, _ = audit(snap, bound)
        assert bound != "1/8" or rs[1].verdict == Verdict.VIOLATED  # so a counterexample is compared too
        rd, text = audit(delta, bound)
        assert [r.verdict for r in rd] == [r.verdict for r in rs]
        assert rd[1].stats["worst SIF"] == rs[1].stats["worst SIF"]
        assert "delta log, N=4, capacity 8" in text and rd[1].stats["snapshot lines"] == len(run) // 7
        if rs[1].counterexample:  # the same event, whatever line it is on in each file
            for key in ("Φπ", "Φ★", "SIF", "counts"):
                assert rd[1].counterexample[key] == rs[1].counterexample[key]
        rb, _ = audit(binds, bound, nodes=nodes)
        assert rb[0].verdict == Verdict.HOLDS
        if widths == (1,):  # one record per event: the same states
            assert rb[1].stats["worst SIF"] == rs[1].stats["worst SIF"]


def test_format_detection(tmp_path):
    run = best_fit_run(1, events=10)
    snap, delta, binds, _ = three_logs(tmp_path, run)
    assert [detect_format(p) for p in (snap, delta, binds)] == ["snapshot", "delta", "bindings"]
    jl = write(tmp_path, [{"event": "bind", "pod": "a", "node": "n0", "gpus": 1}], "b.jsonl")
    assert detect_format(jl) == "bindings"


# ------------------------------------------------------------------ findings in a delta log


def test_capacity_finding_lasts_until_the_node_fits(tmp_path):
    log = [header(), {"event": "arrive", "job": "a", "g": 6, "hosts": [0]},
           {"event": "arrive", "job": "b", "g": 4, "hosts": [0]},  # 10 GPUs on node 0
           {"event": "arrive", "job": "c", "g": 1, "hosts": [1]},
           {"event": "depart", "job": "a"}]
    (valid, sif), _ = audit(write(tmp_path, log))
    assert valid.verdict == Verdict.VIOLATED and valid.counterexample["line"] == 3
    assert valid.counterexample["problems"] == ["node 0: 10 GPUs used > capacity 8"]
    assert valid.stats["invalid lines"] == 2  # lines 3 and 4; line 5 fits again
    assert sif.stats["worst at line"] in (2, 5)


@pytest.mark.parametrize("line,problem", [
    ({"event": "depart", "job": "zz"}, "job zz departs but is not running"),
    ({"event": "arrive", "job": "a", "g": 2, "hosts": [1]}, "job a arrives but is already running"),
    ({"event": "arrive", "job": "b", "g": 2, "hosts": []}, "job b arrived but has no instance placed"),
    ({"event": "arrive", "job": "b", "g": 2, "w": 3, "hosts": [1, 1]}, "job b: 2 instances placed, job has w=3"),
    ({"event": "snapshot", "placement": [[{"job": "a", "g": 4}], []]}, "snapshot disagrees"),
    ({"event": "snapshot", "placement": [[{"job": "a", "g": 4}, {"job": "a", "g": 2}], []]}, "different demands"),
])
def test_event_findings(tmp_path, line, problem):
    log = [header(), {"event": "arrive", "job": "a", "g": 4, "hosts": [0, 0]}, line]
    (valid, _), _ = audit(write(tmp_path, log))
    assert valid.verdict == Verdict.VIOLATED and valid.counterexample["line"] == 3
    assert any(problem in p for p in valid.counterexample["problems"]), valid.counterexample


def test_snapshot_resynchronises(tmp_path):
    """After a snapshot that disagrees, the state is the snapshot's: its jobs can depart, the
    rebuilt ones are gone; anonymous instances compare by demand."""
    log = [header(), {"event": "arrive", "job": "a", "g": 4, "hosts": [0]},
           {"event": "snapshot", "placement": [[{"job": "x", "g": 8}], [2]]},  # disagrees: finding
           {"event": "depart", "job": "x"},
           {"event": "snapshot", "placement": [[], [{"g": 2}]]},  # agrees (anonymous 2-GPU instance)
           {"event": "depart", "job": "a"}]  # a is gone since line 3: finding
    (valid, _), _ = audit(write(tmp_path, log))
    assert valid.counterexample["line"] == 3 and valid.stats["invalid lines"] == 2


def test_consistent_snapshot_is_no_finding(tmp_path):
    log = [header(), {"event": "arrive", "job": "a", "g": 4, "hosts": [0, 1]},
           {"event": "snapshot", "nodes": 2, "capacity": 8, "placement": [[{"job": "a", "g": 4}], [{"job": "a", "g": 4}]]},
           {"event": "depart", "job": "a", "t": 3}]
    (valid, sif), _ = audit(write(tmp_path, log))
    assert valid.verdict == sif.verdict == Verdict.HOLDS


@pytest.mark.parametrize("lines,where", [
    ([{"nodes": 2}], r"log.jsonl:1: field 'format'"),
    ([{"format": "delta"}], r"log.jsonl:1: .*exactly one of 'nodes'"),
    ([header(), {"event": "arrive", "job": "a", "g": 2, "hosts": [0, 2]}], r"log.jsonl:2: field 'hosts\[1\]': node 2 outside 0..1"),
    ([header(), {"event": "arrive", "job": "a", "g": 2, "hosts": ["n0"]}], r"log.jsonl:2: field 'hosts\[0\]': unknown node"),
    ([header(), {"event": "arrive", "job": "a", "g": 9, "hosts": [0]}], r"log.jsonl:2: field 'g': 9 outside 1..8"),
    ([header(), {"event": "arrive", "job": "a", "g": 2}], r"log.jsonl:2: field 'hosts': missing"),
    ([header(), {"event": "arrive", "job": "a", "g": 2, "hosts": [0], "gpus": 2}], r"log.jsonl:2: field 'gpus': unknown"),
    ([header(), {"event": "depart"}], r"log.jsonl:2: field 'job': missing"),
    ([header(), {"event": "move", "job": "a"}], r"log.jsonl:2: field 'event'"),
    ([header(), {"event": "snapshot", "nodes": 3, "placement": []}], r"log.jsonl:2: field 'nodes'"),
    ([header(), {"event": "snapshot", "placement": [[{"job": "a", "g": 9}]]}], r"log.jsonl:2: field 'placement\[0\]\[0\]\.g'"),
    ([header(), "{oops"], r"log.jsonl:2: invalid JSON"),
    ([header()], r"no event lines"),
])
def test_delta_input_errors_name_file_line_field(tmp_path, lines, where):
    with pytest.raises(AuditError, match=where):
        audit(write(tmp_path, lines), fmt="delta")


# ------------------------------------------------------------------ binding streams


NODES = ["node,gpus", "a,8", "b,8", "cpu-1,0"]


def test_binding_stream_csv_and_json_lines_agree(tmp_path):
    nodes = write(tmp_path, NODES, "nodes.csv")
    rows = [("1", "bind", "p1", "a", "4"), ("2", "bind", "p2", "b", "4"), ("3", "bind", "p0", "a", "0"),
            ("4", "bind", "p3", "a", "4"), ("5", "delete", "p2", "", ""), ("6", "delete", "p0", "", "")]
    csv_path = write(tmp_path, ["time,event,pod,node,gpus"] + [",".join(r) for r in rows], "b.csv")
    jl = [{k: v for k, v in zip(("time", "event", "pod", "node", "gpus"), r) if v} for r in rows]
    for rec in jl:
        if "gpus" in rec:
            rec["gpus"] = int(rec["gpus"])
    json_path = write(tmp_path, jl, "b.jsonl")
    (vc, sc), text = audit(csv_path, "1.0", nodes=nodes)
    nodes_jl = write(tmp_path, [{"node": "a", "gpus": 8}, {"node": "b", "gpus": 8}, {"node": "cpu-1", "gpus": 0}], "n.jsonl")
    (vj, sj), _ = audit(json_path, "1.0", nodes=nodes_jl)
    assert vc.verdict == vj.verdict == sc.verdict == sj.verdict == Verdict.HOLDS
    assert sc.stats["worst SIF"] == sj.stats["worst SIF"] == "1"  # 4 and 4 on two nodes: Φπ = 2, Φ★ = 0, N = 2
    assert (sc.stats["worst at line"], sj.stats["worst at line"]) == (3, 2)  # the CSV has a header row
    assert sc.stats["records of pods without GPUs (skipped)"] == 2
    assert sc.stats["listed nodes without GPUs (not in N)"] == 1
    assert "binding stream, N=2, capacity 8" in text and "4 records" in text


@pytest.mark.parametrize("rows,problem", [
    (["1,bind,p1,a,4", "2,bind,p1,b,4"], "pod p1 bound to node b but already bound to node a"),
    (["1,delete,p9,,"], "pod p9 deleted but not bound"),
    (["1,bind,p1,a,4", "2,delete,p1,b,"], "pod p1 deleted from node b but bound to node a"),
    (["1,bind,p1,a,4", "2,delete,p1,,2"], "pod p1 deleted with 2 GPUs"),
    (["1,bind,p1,a,4", "2,bind,p2,a,8"], "node a: 12 GPUs used > capacity 8"),
    (["1,bind,p1,cpu-1,1"], "pod p1 bound to node cpu-1, which has no GPUs"),
])
def test_binding_findings(tmp_path, rows, problem):
    nodes = write(tmp_path, NODES, "nodes.csv")
    (valid, _), _ = audit(write(tmp_path, ["time,event,pod,node,gpus", *rows], "b.csv"), nodes=nodes)
    assert valid.verdict == Verdict.VIOLATED
    assert problem in valid.counterexample["problems"][0] and valid.counterexample["line"] == len(rows) + 1


@pytest.mark.parametrize("rows,nodes,where", [
    (["time,event,pod,node,gpus", "1,bind,p1,zz,1"], NODES, r"b.csv:2: field 'node': unknown node 'zz'"),
    (["time,event,pod,node,gpus", "1,bind,p1,a,9"], NODES, r"b.csv:2: field 'gpus': 9 outside 0..8"),
    (["time,event,pod,node,gpus", "1,bind,p1,a,x"], NODES, r"b.csv:2: field 'gpus': 'x' is not an integer"),
    (["time,event,pod,node,gpus", "1,bind,p1,a"], NODES, r"b.csv:2: 4 cells, the header has 5"),
    (["time,event,pod,node,gpus", "1,evict,p1,a,1"], NODES, r"b.csv:2: field 'event'"),
    (["time,event,pod,node,gpus", "1,bind,p1,,1"], NODES, r"b.csv:2: field 'node': missing"),
    (["time,event,pod,host,gpus"], NODES, r"b.csv:1: field 'host': unknown column"),
    (["time,event,pod,node,gpus", "1,bind,p1,a,1"], ["node,gpus", "a,8", "a,4"], r"nodes.csv:3: field 'node': .*twice"),
    (["time,event,pod,node,gpus", "1,bind,p1,a,1"], ["node,gpus", "a,-1"], r"nodes.csv:2: field 'gpus'"),
])
def test_binding_input_errors(tmp_path, rows, nodes, where):
    with pytest.raises(AuditError, match=where):
        audit(write(tmp_path, rows, "b.csv"), nodes=write(tmp_path, nodes, "nodes.csv"))


def test_mixed_capacities_use_per_node_capacity_and_the_mixed_oracle(tmp_path):
    """A 4-GPU pod on the 8-GPU node of an {8, 4} cluster: Φπ = 1 (the 8-GPU node is partial),
    Φ★ = 0 (it fills the 4-GPU node), SIF = 1/2. Six GPUs on the 4-GPU node are a finding; one
    6-GPU pod there is bad input (no 4-GPU node can hold it, as g above every node's capacity)."""
    nodes = write(tmp_path, ["node,gpus", "big,8", "small,4"], "nodes.csv")
    binds = write(tmp_path, ["time,event,pod,node,gpus", "1,bind,p1,big,4"], "b.csv")
    (valid, sif), text = audit(binds, "1/2", nodes=nodes)
    assert "mixed capacities 1×8, 1×4" in text and sif.verdict == Verdict.HOLDS and sif.stats["worst SIF"] == "1/2"
    (_, sif), _ = audit(binds, "1/4", nodes=nodes)
    assert sif.verdict == Verdict.VIOLATED and sif.counterexample["Φ★"] == 0 and sif.counterexample["Φπ"] == 1
    over = write(tmp_path, ["time,event,pod,node,gpus", "1,bind,p1,small,3", "2,bind,p2,small,3"], "o.csv")
    (valid, _), _ = audit(over, nodes=nodes)
    assert valid.counterexample["problems"] == ["node small: 6 GPUs used > capacity 4"]
    too_big = write(tmp_path, ["time,event,pod,node,gpus", "1,bind,p1,small,6"], "t.csv")
    with pytest.raises(AuditError, match=r"t.csv:2: field 'gpus': an instance of 6 GPUs on node small, which has 4"):
        audit(too_big, nodes=nodes)


def test_delta_log_with_node_list_and_mixed_header(tmp_path):
    nodes = write(tmp_path, ["node,gpus", "big,8", "small,4"], "nodes.csv")
    log = write(tmp_path, [{"format": "delta"}, {"event": "arrive", "job": 1, "g": 4, "hosts": ["big"]}])
    (_, sif), _ = audit(log, "1/4", nodes=nodes)
    assert sif.counterexample["SIF"] == "1/2"
    mixed = write(tmp_path, [{"format": "delta", "capacities": [8, 4]}, {"event": "arrive", "job": 1, "g": 4, "hosts": [0]}], "m.jsonl")
    (_, sif2), _ = audit(mixed, "1/4")
    assert sif2.counterexample == sif.counterexample | {"file": mixed}
    with pytest.raises(AuditError, match=r"m.jsonl:1: field 'capacities'.*--nodes-file"):
        audit(mixed, nodes=nodes)


# ------------------------------------------------------------------ the pieces, against independent recomputation


def test_rebuilt_state_matches_recomputation():
    rng = random.Random(5)
    caps = (8, 8, 4, 2, 1)
    state, jobs = RebuiltState(Cluster(caps)), {}
    for step in range(300):
        if jobs and rng.random() < 0.45:
            name = rng.choice(sorted(jobs))
            assert state.remove(name) == jobs.pop(name)
        else:
            g = rng.randint(1, 4)
            slots = tuple(Slot(rng.randrange(len(caps)), g) for _ in range(rng.randint(1, 3)))
            jobs[f"j{step}"] = slots
            state.add(f"j{step}", slots)
        used = Counter()
        for slots in jobs.values():
            for n, g in slots:
                used[n] += g
        assert state.partial == sum(0 < used[n] < c for n, c in enumerate(caps))
        assert state.overfull() == [f"node {n}: {used[n]} GPUs used > capacity {c}" for n, c in enumerate(caps) if used[n] > c]
        assert state.counts == tuple(sum(1 for s in jobs.values() for x in s if x.g == g) for g in range(1, 9))


def test_exact_phi_star_against_brute_force():
    """The memoised Φ★ (BFD certificate, else the oracle; the mixed oracle on mixed capacities)
    against exhaustive searches that know nothing of patterns."""
    rng = random.Random(3)
    for _ in range(60):
        counts = tuple(rng.choice([0, 0, 1, 2]) for _ in range(8))
        n = sum(counts) + 1
        assert exact_phi_star(counts, Cluster((8,) * n)) == phi_star_bruteforce(counts, n).objective
        small = tuple(rng.randint(0, 2) if g in (1, 2, 4) else int(g == 3 and rng.random() < 0.5) for g in range(1, 9))
        caps = (8, 8, 4, 2)
        assert exact_phi_star(small, Cluster(caps)) == mixed_bruteforce(MixedProblem.of(caps, small)).objective


def test_unproven_phi_star_is_inconclusive_never_a_pass(tmp_path, monkeypatch, capsys):
    def limit_hit(counts, cluster):
        raise Unproven("Φ★: time limit")

    monkeypatch.setattr(audit_tally, "_solve", limit_hit)
    audit_tally.clear_memo()
    log = write(tmp_path, [header(), {"event": "arrive", "job": "a", "g": 3, "hosts": [0]},
                           {"event": "arrive", "job": "b", "g": 3, "hosts": [1]}])
    (valid, sif), _ = audit(log)
    assert valid.verdict == Verdict.HOLDS and sif.verdict == Verdict.INCONCLUSIVE
    assert sif.stats["Φ★ unproven lines"] == 2 and "line 2" in sif.message
    assert main(["--audit", log]) == 3


# ------------------------------------------------------------------ the command line


def test_cli(tmp_path, capsys):
    nodes = write(tmp_path, NODES, "nodes.csv")
    binds = write(tmp_path, ["time,event,pod,node,gpus", "1,bind,p1,a,8"], "b.csv")
    assert main(["--audit", binds, "--nodes-file", nodes]) == 0
    assert main(["--audit", binds]) == 2
    assert "--nodes-file" in capsys.readouterr().err
    delta = write(tmp_path, [header(), {"event": "arrive", "job": "a", "g": 8, "hosts": [0]}])
    assert main(["--audit", delta, "--audit-format", "delta"]) == 0
    assert main(["--audit", delta, "--audit-format", "snapshot"]) == 2  # a header is no snapshot
    err = capsys.readouterr().err
    assert "log.jsonl:1" in err and len(err.strip().splitlines()) == 1
    assert main(["--theorem", "1", "--nodes-file", nodes]) == 2

"""The openb node list (heuristics.gpu.node_list), mixed-capacity snapshots, and the programs that
take them: ``sifopt --nodes-file``, ``sifopt`` on a snapshot with ``capacities``, ``admit``."""
from __future__ import annotations

import json

import pytest

from heuristics.gpu.node_list import NodeListError, load_node_list
from heuristics.gpu.snapshot import SnapshotError, parse_snapshot
from oracle.gpu.mixed_phi import MixedProblem, mixed_bruteforce
from proofs_check.cli.admit import main as admit_main
from proofs_check.cli.sifopt import main as sifopt_main

HEADER = "sn,cpu_milli,memory_mib,gpu,model\n"
ROWS = ["n0,64000,262144,2,P100", "n1,96000,786432,8,G2", "n2,96000,786432,8,V100M32",
        "n3,32000,131072,1,A10", "n4,64000,262144,4,T4", "n5,16000,65536,0,CPU"]


def _nodes(tmp_path, rows=ROWS, header=HEADER, name="nodes.csv"):
    p = tmp_path / name
    p.write_text(header + "\n".join(rows) + "\n")
    return str(p)


def test_load_and_describe(tmp_path):
    nl = load_node_list(_nodes(tmp_path))
    assert nl.capacities == (2, 8, 8, 1, 4) and nl.models == ("P100", "G2", "V100M32", "A10", "T4")
    assert nl.cpu_only == 1 and nl.total_gpus == 23 and not nl.is_uniform
    assert nl.partition(8).capacities == (8, 8) and nl.partition(8).is_uniform
    assert nl.composition()[(8, "G2")] == 1
    assert "5 GPU nodes (2×8-GPU, 1×4-GPU, 1×2-GPU, 1×1-GPU), 23 GPUs" in nl.summary()
    assert "1 CPU-only rows" in nl.summary()


@pytest.mark.parametrize("rows,header,where", [
    (["n0,1,1,2"], "sn,cpu_milli,memory_mib,gpu\n", ":1: field 'model': missing from header"),
    (["n0,1,1,9,G2"], HEADER, ":2: field 'gpu': 9 GPUs"),
    (["n0,1,1,x,G2"], HEADER, ":2: field 'gpu': not a number"),
    (["n0,1,1,2.5,G2"], HEADER, ":2: field 'gpu': not a non-negative integer"),
    (["n0,1,1,2,G2", "n0,1,1,2,G2"], HEADER, ":3: field 'sn': duplicate node 'n0' (first on line 2)"),
    (["n0,1,1,2,"], HEADER, ":2: field 'model': empty"),
    (["n0,1,1,0,CPU"], HEADER, ".csv: field 'gpu': no node with GPUs"),
    (["n0,1,1,2,G2,extra"], HEADER, ":2: field 'row': row has 6 fields"),
])
def test_bad_node_lists_are_one_line_errors(tmp_path, rows, header, where):
    path = _nodes(tmp_path, rows, header)
    with pytest.raises(NodeListError) as e:
        load_node_list(path)
    assert str(e.value).startswith(path) and where in str(e.value) and "\n" not in str(e.value)


def test_sifopt_nodes_file_matches_bruteforce(tmp_path, capsys):
    path = _nodes(tmp_path)
    rc = sifopt_main(["--nodes-file", path, "--counts", "1=3,2=2,4=1,8=1", "--json"])
    r = json.loads(capsys.readouterr().out)
    brute = mixed_bruteforce(MixedProblem.of((2, 8, 8, 1, 4), [3, 2, 0, 1, 0, 0, 0, 1]))
    assert rc == 0 and r["phi_star"]["objective"] == brute.objective
    assert r["f_star"] == brute.objective / 5 and r["node_capacities"] == {"8": 2, "4": 1, "2": 1, "1": 1}


def test_sifopt_nodes_file_errors(tmp_path, capsys):
    assert sifopt_main(["--nodes-file", _nodes(tmp_path, ["n0,1,1,x,G2"]), "--counts", "1=1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "field 'gpu'" in err
    assert sifopt_main(["--nodes-file", _nodes(tmp_path), "--nodes", "3", "--counts", "1=1"]) == 2
    assert sifopt_main(["--nodes-file", _nodes(tmp_path), "--counts", "2=20"]) == 1  # does not fit: infeasible


def test_mixed_snapshot_sif(tmp_path, capsys):
    snap = {"capacities": [8, 2, 1], "placement": [[{"job": 1, "g": 2}], [{"job": 2, "g": 1}], [{"job": 3, "g": 1}]]}
    p = tmp_path / "s.json"
    p.write_text(json.dumps(snap))
    assert sifopt_main([str(p), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    # Φπ = 2 (the 8-GPU node holds 2, the 2-GPU node 1); best: 2 on the 2-GPU node, 1 + 1 elsewhere
    assert r["placement"]["phi_pi"] == 2 and r["phi_star"]["objective"] == 1
    assert r["placement"]["sif"] == pytest.approx(1 / 3)


def test_snapshot_capacities_fields():
    s = parse_snapshot({"capacities": [8, 4], "models": ["G2", "T4"], "placement": [[{"job": 1, "g": 8}], []]}, "x")
    assert s.is_mixed and s.n_nodes == 2 and s.capacity == 8 and s.node_capacities() == (8, 4)
    assert parse_snapshot(s.to_json(), "x") == s
    assert not parse_snapshot({"nodes": 2, "placement": [[8], []]}, "x").is_mixed  # old shape unchanged
    counts = parse_snapshot({"capacities": [2, 2, 1], "counts": {"1": 3}}, "x")
    assert counts.n_nodes == 3 and counts.node_capacities() == (2, 2, 1)


@pytest.mark.parametrize("snap,field", [
    ({"capacities": [8, 2], "placement": [[], [4]]}, "placement[1]"),
    ({"capacities": [8, 2], "nodes": 3, "placement": [[], []]}, "capacities"),
    ({"capacities": [8, 0], "placement": [[]]}, "capacities[1]"),
    ({"capacities": "8", "placement": [[]]}, "capacities"),
    ({"models": ["A"], "placement": [[]]}, "models"),
    ({"capacities": [8], "models": ["A", "B"], "placement": [[]]}, "models"),
    ({"capacities": [8, 16], "capacity": 8, "placement": [[]]}, "capacities"),
])
def test_bad_capacities_name_the_field(snap, field):
    with pytest.raises(SnapshotError) as e:
        parse_snapshot(snap, "s.json")
    assert e.value.field == field


def test_admit_answers_mixed_snapshots(tmp_path, capsys):
    # Mixed snapshots are answered on their own nodes (tests/test_admit_mixed.py has the rest).
    p = tmp_path / "s.json"
    p.write_text(json.dumps({"capacities": [8, 2], "placement": [[{"job": 1, "g": 4}], []]}))
    assert admit_main([str(p), "--job", "4x1"]) == 0
    assert "migrations: 0" in capsys.readouterr().out

"""`sifopt`: outputs, exit codes and one-line errors; SIF of placements."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from heuristics.gpu.cluster import Instance, Placement
from heuristics.gpu.sif import sif
from oracle.result import Certificate, Status, Unproven
from proofs_check.cli.sifopt import main


def _run(capsys, argv):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def _write(tmp_path, obj, name="snap.json"):
    p = tmp_path / name
    p.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return str(p)


@pytest.mark.parametrize("solver", ["auto", "cpsat", "milp", "brute"])
def test_counts_json_output(capsys, solver):
    rc, out, err = _run(capsys, ["--nodes", "8", "--counts", "1=6,2=1,4=2", "--json", "--solver", solver])
    assert rc == 0 and err == ""
    r = json.loads(out)  # HiGHS's banner must not leak into stdout
    assert r["phi_star"]["status"] == "optimal" and r["phi_star"]["objective"] == 0
    assert r["f_star"] == 0 and r["min_nodes"]["objective"] == 2 and r["wcc"] is True
    packed = sorted(g for w in r["phi_star"]["witness"] for g in w["pattern"] * w["count"])
    assert packed == sorted([1] * 6 + [2] + [4, 4])
    assert r["placement"] is None


def test_placement_snapshot_text_and_sif(capsys, tmp_path):
    path = _write(tmp_path, {"nodes": 3, "placement": [[4, 2, 1], [4], []]})
    rc, out, _ = _run(capsys, [path])
    assert rc == 0
    assert "Φ★ = 1" in out and "Φπ = 2" in out and "SIF = 0.333333" in out and "[4 4]" in out
    rc, out, _ = _run(capsys, [path, "--json"])
    pl = json.loads(out)["placement"]
    assert pl == {"phi_pi": 2, "f_pi": 2 / 3, "sif": 1 / 3}


def test_counts_snapshot_and_infeasible_exit_1(capsys, tmp_path):
    path = _write(tmp_path, {"nodes": 1, "counts": {"5": 2}})
    rc, out, _ = _run(capsys, [path])
    assert rc == 1 and "infeasible" in out and "min nodes in use (no node limit) = 2" in out


@pytest.mark.parametrize("content, field", [
    ({"nodes": 2, "cnts": {}}, "field 'cnts'"),
    ({"nodes": 2, "counts": {"9": 1}}, "field 'counts.9'"),
    ({"nodes": 2, "counts": {"0": 1}}, "field 'counts.0'"),
    ({"nodes": 2, "counts": {"2": -1}}, "field 'counts.2'"),
    ({"nodes": 2, "counts": {"2": 1.5}}, "field 'counts.2'"),
    ({"counts": {"2": 1}}, "field 'nodes'"),
    ({"nodes": 2, "placement": [[8, 1], []]}, "field 'placement[0]'"),
    ({"nodes": 2, "placement": [[4], [9]]}, "field 'placement[1][0]'"),
    ({"nodes": 2, "placement": [[{"job": 1, "g": 9}]]}, "field 'placement[0][0].g'"),
    ({"nodes": 2, "placement": [[{"job": 1, "g": 4}], [{"job": 1, "g": 2}]]}, "field 'placement[1][0].g'"),
    ({"nodes": 1, "placement": [[4], [2]]}, "field 'nodes'"),
    ({"nodes": 2, "counts": {"1": 1}, "placement": [[1]]}, "exactly one of"),
    ('{"nodes": 2, ', "invalid JSON"),
    ("[1, 2]", "JSON object"),
])
def test_bad_snapshot_one_line_exit_2(capsys, tmp_path, content, field):
    path = _write(tmp_path, content)
    rc, out, err = _run(capsys, [path])
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and path in err and field in err


@pytest.mark.parametrize("argv, needle", [
    (["--nodes", "2", "--counts", "9=1"], "--counts: field '9'"),
    (["--nodes", "2", "--counts", "2=-1"], "--counts: field '2'"),
    (["--nodes", "2", "--counts", "2=1.5"], "--counts: field '2'"),
    (["--nodes", "2", "--counts", "2=1,2=3"], "given twice"),
    (["--nodes", "2", "--counts", "x"], "--counts: field 'x'"),
    (["--nodes", "-1", "--counts", "1=1"], "--nodes"),
    (["--counts", "1=1"], "--nodes N"),
    (["--bogus"], "unrecognized arguments"),
    (["/no/such/file.json"], "/no/such/file.json: no such file"),
    (["--nodes", "4", "--counts", "1=20", "--solver", "brute"], "--solver brute"),
])
def test_bad_usage_one_line_exit_2(capsys, argv, needle):
    rc, out, err = _run(capsys, argv)
    assert rc == 2 and out == "" and err.count("\n") == 1 and needle in err


def test_console_script_runs():
    """The installed entry point: `python -m` equivalent of `sifopt` in a subprocess."""
    cmd = [sys.executable, "-c", "import sys; from proofs_check.cli.sifopt import main; sys.exit(main())",
           "--nodes", "2", "--counts", "3=2,2=1", "--json", "--solver", "milp"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["phi_star"]["objective"] == 0


def _placement(nodes):
    return Placement(8, tuple(tuple(Instance(100 * n + i, g) for i, g in enumerate(node)) for n, node in enumerate(nodes)))


def test_sif_report():
    r = sif(_placement([[5], [3], [2, 2], []]))
    assert (r.phi_pi, r.phi_star, r.n_nodes) == (3, 1, 4)  # best: 5+3, 2+2
    assert r.sif == pytest.approx(0.5) and r.f_pi == 0.75 and r.f_star == 0.25
    assert r.certificate.status == "optimal" and r.counts == (0, 2, 1, 0, 1, 0, 0, 0)


def test_sif_refuses_unknown_and_invalid():
    unknown = Certificate(Status.FEASIBLE, 1, 0, (), "cp-sat", "x", 10.0)
    with pytest.raises(Unproven):
        sif(_placement([[5], [3]]), method=lambda c, n, g: unknown)
    with pytest.raises(ValueError, match="capacity"):
        sif(_placement([[5, 4]]))

"""One snapshot format (heuristics.gpu.snapshot) for `sifopt`, `admit` and `verify --audit`.

A snapshot file that one command accepts, the other two accept; bad input is exit 2 with one
line on stderr naming the file and the field, in every command.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from heuristics.gpu.snapshot import Item, Snapshot, SnapshotError, load_snapshot, parse_snapshot
from proofs_check.cli.admit import main as admit
from proofs_check.cli.sifopt import main as sifopt
from proofs_check.cli.verify import main as verify

CANONICAL = {"capacity": 8, "nodes": 3,
             "placement": [[{"job": 1, "g": 4}, {"job": 2, "g": 2}], [{"job": 1, "g": 4}], []]}
ACCEPTED = {
    "canonical": CANONICAL,
    "sifopt-bare-demands": {"nodes": 3, "placement": [[4, 2, 1], [4], []]},
    "admit-padded": {"capacity": 8, "nodes": 4,
                     "placement": [[{"job": 1, "g": 4}], [{"job": 2, "g": 4}], [{"job": 3, "g": 2}]]},
    "audit-string-ids": {"nodes": 2, "placement": [[{"job": "train-1", "g": 4}, {"job": "train-1", "g": 4}],
                                                   [{"job": 7, "g": 2}]]},
    "no-job-id": {"placement": [[{"g": 8}], [{"g": 2}, 1]]},
}


def write(tmp_path: Path, obj: object, name: str = "snap.json", indent: int | None = None) -> str:
    p = tmp_path / name
    p.write_text(obj if isinstance(obj, str) else json.dumps(obj, indent=indent))
    return str(p)


def run_all(path: str) -> dict[str, int]:
    """Exit code of each of the three commands on one snapshot file."""
    return {"sifopt": sifopt([path]), "admit --repack": admit([path, "--repack"]),
            "admit --job": admit([path, "--job", "1x1"]), "verify --audit": verify(["--audit", path])}


# ------------------------------------------------------------------------------ the loader


def test_canonical_shape_round_trips():
    snap = parse_snapshot(CANONICAL, "x.json")
    assert snap.has_placement and snap.n_nodes == 3 and snap.counts == (0, 1, 0, 2, 0, 0, 0, 0)
    assert snap.nodes is not None and snap.nodes[1] == (Item(1, 4),)
    assert snap.to_json() == CANONICAL
    assert parse_snapshot(snap.to_json(), "again") == snap


def test_older_shapes_read_into_the_canonical_one():
    old_sifopt = parse_snapshot({"nodes": 3, "placement": [[4, 2, 1], [4], []]}, "s")
    assert old_sifopt.to_json()["placement"] == [[{"g": 4}, {"g": 2}, {"g": 1}], [{"g": 4}], []]
    padded = parse_snapshot(ACCEPTED["admit-padded"], "a")
    assert padded.n_nodes == 4 and padded.to_json()["placement"][3] == []
    counts = parse_snapshot({"nodes": 2, "counts": {"1": 6, "4": 2}}, "c")
    assert not counts.has_placement and counts.to_json() == {"capacity": 8, "nodes": 2, "counts": {"1": 6, "4": 2}}


def test_placement_gives_dense_ids_and_the_files_labels():
    snap = parse_snapshot(ACCEPTED["audit-string-ids"] | {"placement": [[{"job": "a", "g": 4}, 2],
                                                                        [{"job": "a", "g": 4}, {"job": "1", "g": 1},
                                                                         {"job": 1, "g": 1}]]}, "x")
    placement, labels = snap.placement()
    assert labels == ("a", None, "1")  # 1 and "1" are one job; a bare demand has no id
    assert [[i.job for i in node] for node in placement.nodes] == [[0, 1], [0, 2, 2]]


def test_strict_refuses_what_the_audit_reports_as_a_finding():
    over = {"nodes": 1, "placement": [[{"job": 1, "g": 8}, {"job": 2, "g": 1}]]}
    with pytest.raises(SnapshotError, match=r"x: field 'placement\[0\]': node 0 uses 9 GPUs"):
        parse_snapshot(over, "x")
    assert parse_snapshot(over, "x", strict=False).counts[7] == 1


def test_error_survives_pickling():
    import pickle

    e = SnapshotError("f.json", "nodes", "missing")
    again = pickle.loads(pickle.dumps(e))
    assert str(again) == str(e) == "f.json: field 'nodes': missing"


def test_of_nodes_pads_and_refuses_too_few_nodes():
    snap = Snapshot.of_nodes([[("a", 2)]], n_nodes=2)
    assert snap.n_nodes == 2 and snap.nodes == ((Item("a", 2),), ())
    with pytest.raises(ValueError):
        Snapshot.of_nodes([[], []], n_nodes=1)


def test_missing_file_names_it(tmp_path):
    with pytest.raises(SnapshotError, match="nope.json: no such file"):
        load_snapshot(str(tmp_path / "nope.json"))


# ------------------------------------------------------------------------------ the three commands


@pytest.mark.parametrize("name", sorted(ACCEPTED))
@pytest.mark.parametrize("indent", [None, 2])
def test_a_snapshot_is_accepted_by_all_three_commands(tmp_path, capsys, name, indent):
    codes = run_all(write(tmp_path, ACCEPTED[name], indent=indent))
    err = capsys.readouterr().err
    assert "error" not in err
    assert codes == {"sifopt": 0, "admit --repack": 0, "admit --job": 0, "verify --audit": 0}


def test_admit_writes_the_canonical_shape_the_others_read(tmp_path, capsys):
    path = write(tmp_path, ACCEPTED["admit-padded"])
    assert admit([path, "--job", "8x2", "--json"]) == 0
    after = json.loads(capsys.readouterr().out)["after"]
    assert after == {"capacity": 8, "nodes": 4,
                     "placement": [[{"job": 1, "g": 4}], [{"job": 2, "g": 4}, {"job": 3, "g": 2}],
                                   [{"job": 4, "g": 8}], [{"job": 4, "g": 8}]]}
    assert run_all(write(tmp_path, after, "after.json"))["sifopt"] == 0
    assert verify(["--audit", str(tmp_path / "after.json")]) == 0


def test_counts_only_is_for_sifopt(tmp_path, capsys):
    path = write(tmp_path, {"nodes": 2, "counts": {"4": 2}})
    assert sifopt([path]) == 0
    capsys.readouterr()
    for argv in ([path, "--repack"], ["--audit", path]):
        assert (admit if argv[0] == path else verify)(argv) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and path in err and "field 'counts'" in err


BAD = [
    ({"nodes": 2, "placement": [[{"job": 1, "g": 9}]]}, "field 'placement[0][0].g'"),
    ({"nodes": 2, "placement": [[{"job": 1, "gpu": 2}]]}, "field 'placement[0][0].gpu'"),
    ({"nodes": 2, "placement": [[{"job": 1.5, "g": 2}]]}, "field 'placement[0][0].job'"),
    ({"nodes": 2, "placement": [[True]]}, "field 'placement[0][0]'"),
    ({"nodes": 2, "placement": {"0": []}}, "field 'placement'"),
    ({"nodes": 1, "placement": [[], []]}, "field 'nodes'"),
    ({"nodes": "2", "placement": [[]]}, "field 'nodes'"),
    ({"capacity": 0, "placement": [[]]}, "field 'capacity'"),
    ({"nodes": 2, "placment": [[]]}, "field 'placment'"),
    ({"nodes": 2}, "exactly one of"),
    ('{"nodes": 2,\n "placement": [[}', "snap.json:2: invalid JSON"),
]


@pytest.mark.parametrize("content, needle", BAD)
def test_bad_snapshot_is_exit_2_one_line_naming_file_and_field_in_every_command(tmp_path, capsys, content, needle):
    path = write(tmp_path, content)
    for prog, main, argv in (("sifopt", sifopt, [path]), ("admit", admit, [path, "--repack"]),
                             ("verify", verify, ["--audit", path])):
        assert main(argv) == 2, prog
        out, err = capsys.readouterr()
        assert len(err.strip().splitlines()) == 1, (prog, err)
        assert err.startswith(f"{prog}: error: {path}") and needle in err, (prog, err)
        if prog != "verify":
            assert out == ""


def test_over_capacity_is_bad_input_for_the_oracles_and_a_finding_for_the_audit(tmp_path, capsys):
    """sifopt and admit need a valid placement to compute anything (exit 2); the audit's job is
    to report that the scheduler produced an invalid one (audit.valid violated, exit 1)."""
    path = write(tmp_path, {"nodes": 1, "placement": [[{"job": 1, "g": 8}, {"job": 2, "g": 4}]]})
    assert sifopt([path]) == 2 and admit([path, "--repack"]) == 2
    assert "field 'placement[0]'" in capsys.readouterr().err
    assert verify(["--audit", path]) == 1

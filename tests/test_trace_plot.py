"""Counterexamples as pictures (issue 14 item 7): ``verify --plot DIR`` and ``--replay FILE --plot DIR``.

Every counterexample and witness of ``verify --all --max-nodes 3`` is rendered from the records of
the golden run (tests/golden/verify_all_max_nodes_3.json, which test_golden.py pins to a fresh run
of exactly that command; the run itself takes over a minute, so the end-to-end ``--plot`` of a fresh
run is the slow test at the bottom). A picture shows the trace as the code replays it today, so each
row is checked against the core's own replay of the record (``replay_steps``), not against the
picture's re-run. The golden file predates the record envelope (``format_version``, ``model``),
which ``_lifted`` adds before the schema check.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from matplotlib.image import imread

from heuristics.gpu.baselines import NodeRulePolicy
from heuristics.gpu.policy import EventResult
from proofs_check.cli.verify import main
from proofs_check.core.trace import validate
from heuristics.gpu.hier_abs import HierView
from proofs_check.core.replay import replay_steps
from proofs_check.gpu.events import Event, used_per_node
from proofs_check.gpu.flat_claims import FLAT, compass_factory
from proofs_check.gpu.hier_model import HierModel, legal_demands
from proofs_check.gpu.policy_model import EventBounds, PolicyModel
from proofs_check.gpu.trace_plot import Picture, Skipped, figure, picture, plot_records, save

GOLDEN = Path(__file__).parent / "golden" / "verify_all_max_nodes_3.json"
PNG = b"\x89PNG\r\n\x1a\n"


def _lifted(rec: dict) -> dict:
    """A golden record in today's format (the same trace; only the envelope is new)."""
    if "format_version" in rec:  # a golden file regenerated since the envelope came in
        return rec
    out = {"format_version": 1, **rec}
    if "kind" not in rec:  # the golden RingStitch record carries neither kind nor claim
        out.update(kind="ring-choice", claim="ring-choice")
    if rec.get("kind") == "trace":
        hier = rec.get("family") == "hier"
        out.update(model="hier" if hier else "policy", n_nodes=rec["n_domains"] if hier else rec["n_nodes"])
    validate(out, rec.get("claim", "ring-choice"))
    return out


def _golden_records() -> list[dict]:
    doc = json.loads(GOLDEN.read_text())
    found = [r.get("counterexample") or (r.get("stats") or {}).get("witness") for r in doc["results"]]
    return [_lifted(rec) for rec in found if rec]


GOLDEN_RECORDS = _golden_records()


def _used(strip) -> int:
    return sum(c is not None for c in strip.cells)


def _replayed(rec: dict) -> list:
    """The record re-run by the core (``replay_steps`` through its state model), independently of
    the picture's own re-run (``trace_view.walk`` / ``hier_model.walk``): what the code does today."""
    events = [Event.from_json(e) for e in rec["events"]]
    if rec["model"] == "hier":
        k = rec["K"]
        return replay_steps(HierModel(rec["n_nodes"], k, rec["variant"], legal_demands(k), 0, 0, rec["wcc_trajectory"]),
                            events)
    model = PolicyModel(compass_factory(rec["variant"]), rec["n_nodes"], EventBounds(FLAT[rec["claim"]].demands, 0, 0),
                        rec["wcc_trajectory"])
    return replay_steps(model, events)


def _used_of(state) -> list[int]:
    """GPUs used per node (flat, sorted) or in total (hier: a panel-level unit is a whole panel)."""
    if isinstance(state, HierView):
        return [8 * sum(used_per_node(state.panel)) + sum(used_per_node(state.gpu))]
    return sorted(used_per_node(state))


def test_the_golden_run_has_the_counterexamples_this_test_is_about():
    kinds = sorted({(r["kind"], r.get("model")) for r in GOLDEN_RECORDS}, key=str)
    assert kinds == sorted({("trace", "policy"), ("trace", "hier"), ("counts", None), ("ring-choice", None)}, key=str)


@pytest.mark.parametrize("rec", GOLDEN_RECORDS, ids=[f"{r['claim']}-{r.get('K', '')}" for r in GOLDEN_RECORDS])
def test_every_counterexample_of_verify_all_max_nodes_3_is_drawn(rec, tmp_path):
    pic = picture(rec)
    if rec["kind"] == "ring-choice":
        assert isinstance(pic, Skipped) and "RingStitch" in pic.reason
        return
    assert isinstance(pic, Picture)
    if rec["kind"] == "counts":  # the exact witness and Algorithm 2's own packing
        assert [r.event for r in pic.rows] == ["exact Φ★ witness", f"Algorithm 2 ({rec['branch']})"]
        assert all(sum(map(_used, r.strips)) == rec["T"] for r in pic.rows)
        assert f"Φ★={rec['Φ★']}" in pic.rows[0].figures
    else:  # a row per replayed event, showing the state after it (an event not applied: the state before)
        steps = _replayed(rec)
        assert len(pic.rows) == len(steps) and len(steps) <= len(rec["events"])
        for row, st in zip(pic.rows, steps):
            drawn = [sum(map(_used, row.strips))] if rec["model"] == "hier" else sorted(map(_used, row.strips))
            assert drawn == _used_of(st.state)
            assert re.search(r"Φπ=\d+  Φ★=\d+  SIF=\d+(/\d+)?$", row.figures), row.figures
            assert bool(row.failure) == (not st.applied)
        if rec["model"] == "policy":
            assert [r.figures.split()[0] for r in pic.rows] == [f"N={rec['n_nodes']}"] * len(pic.rows)
    fig = figure(pic)
    assert len(fig.axes) == len(pic.rows)
    assert [ax.get_ylabel() for ax in fig.axes] == [r.event for r in pic.rows]
    path = save(fig, tmp_path / "f.png")
    assert path.read_bytes()[:8] == PNG
    h, w, _ = imread(path).shape
    assert h > 100 * len(pic.rows) and w > 400


def test_plot_records_numbers_the_files_in_report_order_and_names_the_skipped(tmp_path):
    some = [r for r in GOLDEN_RECORDS if r["claim"] in ("prop3.tight", "alg2.nowcc", "ring-choice")]
    done = plot_records(some, tmp_path)
    assert [p.name for p in done.written] == ["01-prop3.tight.png", "02-alg2.nowcc.png"]
    assert done.skipped == (Skipped("ring-choice", done.skipped[0].reason),)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["01-prop3.tight.png", "01-prop3.tight.svg",
                                                          "02-alg2.nowcc.png", "02-alg2.nowcc.svg"]


def test_a_slotted_compass_row_marks_its_slots_and_pool():
    rec = next(r for r in GOLDEN_RECORDS if r["claim"] == "thm1.sif")
    pic = picture(rec)
    assert isinstance(pic, Picture)
    last = pic.rows[-1]
    marks = sorted(m.text for s in last.strips for m in s.marks)
    assert marks == ["pool", "w2", "w4", "w4"]  # node 0 pool [J0 J0 J1 ×4]; [w2: J2][w4: J3]; [w4: J3]
    assert last.figures == "N=3  Φπ=3  Φ★=0  SIF=1"


# --------------------------------------------------------------------------- the CLI
def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def _pngs(d: Path) -> list[str]:
    return sorted(p.name for p in d.glob("*.png"))


def test_verify_plot_on_a_run_and_on_its_replay(capsys, tmp_path):
    report = tmp_path / "r.json"
    code, out = run(capsys, "--claim", "thm1.slotted", "--max-nodes", "2", "--quiet", "--json", str(report),
                    "--plot", str(tmp_path / "run"))
    assert code == 1 and _pngs(tmp_path / "run") == ["01-thm1.slotted.png"]
    assert "plot: 1 figure(s)" in out and "0 record(s) without a figure" in out
    code, out = run(capsys, "--replay", str(report), "--plot", str(tmp_path / "replay"))
    assert code == 1 and _pngs(tmp_path / "replay") == ["01-thm1.slotted.png"]


def test_verify_policy_plot_draws_the_counterexample_and_the_measure_witness(capsys, tmp_path):
    code, out = run(capsys, "--policy", "first-fit", "--claim", "policy.sif", "--bound", "0", "--measure", "sif",
                    "--max-nodes", "2", "--depth", "2", "--quiet", "--plot", str(tmp_path))
    assert code == 1
    assert _pngs(tmp_path) == ["01-policy.sif.png", "02-measure.sif.png"]


class CrashesOnDeparture(NodeRulePolicy):
    """Raises on a departure while two jobs run (policy.no-stuck: the scheduler raised)."""

    def __init__(self, n_nodes: int, capacity: int = 8) -> None:
        super().__init__("best-fit", n_nodes, capacity)

    def _fresh(self) -> NodeRulePolicy:
        return CrashesOnDeparture(self.n_nodes, self.capacity)

    def depart(self, job_id: int) -> EventResult:
        if len(self.running()) > 1:
            raise KeyError(job_id)
        return super().depart(job_id)


def test_a_scheduler_that_raises_gets_its_last_row_from_the_record(capsys, tmp_path):
    report = tmp_path / "r.json"
    code, _ = run(capsys, "--policy", f"{__name__}:CrashesOnDeparture", "--claim", "policy.no-stuck",
                  "--max-nodes", "1", "--depth", "3", "--quiet", "--json", str(report))
    assert code == 1
    rec = json.loads(report.read_text())["results"][0]["counterexample"]
    pic = picture(rec)
    assert isinstance(pic, Picture) and len(pic.rows) == len(rec["events"])
    assert pic.rows[-1].failure and not any(r.failure for r in pic.rows[:-1])
    code, out = run(capsys, "--replay", str(report), "--plot", str(tmp_path / "p"))
    assert _pngs(tmp_path / "p") == ["01-policy.no-stuck.png"]


def test_plot_usage_errors(capsys, tmp_path):
    a_file = tmp_path / "f"
    a_file.write_text("x")
    assert main(["--claim", "thm1.slotted", "--plot", str(a_file)]) == 2
    assert main(["--claim", "thm1.slotted", "--plot", str(tmp_path / "no" / "dir")]) == 2
    assert main(["--audit", str(a_file), "--plot", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 3 and "--plot does not apply to --audit LOG" in err


@pytest.mark.slow
def test_verify_all_max_nodes_3_plot_end_to_end(tmp_path):
    """The fresh run: one PNG per record, the RingStitch record named as drawn without a figure."""
    proc = subprocess.run([sys.executable, "-m", "proofs_check.cli.verify", "--all", "--max-nodes", "3", "--quiet",
                           "--json", str(tmp_path / "r.json"), "--plot", str(tmp_path / "p")],
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "plot: 21 figure(s)" in proc.stdout and "1 record(s) without a figure" in proc.stdout
    assert "plot: no figure for ring-choice: " in proc.stdout
    pngs = sorted((tmp_path / "p").glob("*.png"))
    assert len(pngs) == 21 and all(p.read_bytes()[:8] == PNG for p in pngs)


def test_hierarchical_rows_keep_the_domain_order_of_the_row_above():
    """The canonical form may list a row's domains in another order: drawn, they keep the
    previous row's order (a reordering is not a migration)."""
    from proofs_check.gpu.trace_plot import Row, Strip, stable_order

    a = Strip("x", ("J0",) * 8, group=0)
    b = Strip("y", ("J1",) * 4 + (None,) * 4, group=1)
    empty = Strip("z", (None,) * 8, group=1)
    rows = (Row("+J0", (a._replace(group=0), empty._replace(group=1)), ""),
            Row("+J1", (b._replace(group=0), a._replace(group=1)), ""))  # canonical: J1's domain first
    drawn = stable_order(rows)
    assert [s.cells[0] for s in drawn[1].strips] == ["J0", "J1"]
    assert [s.label for s in drawn[1].strips] == ["D0.P0", "D1.P0"]

"""`verify --audit` on kubectl's own output (proofs_check.gpu.k8s_audit, fragmentation_wait):
the example history of examples/k8s (a mixed 4/8-GPU cluster, a CPU node, pods that never
schedule, finished pods, a gang, a node removed while a pod runs) and small cases (issue 24)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from proofs_check.cli.verify import main as verify_main
from proofs_check.core.verdict import Verdict
from proofs_check.gpu.audit import audit_path, detect_format, parse_bound
from proofs_check.gpu.fragmentation_wait import WaitCause, cause
from proofs_check.gpu.k8s_audit import K8sAuditOptions

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("make_k8s_logs", ROOT / "examples" / "k8s" / "make_k8s_logs.py")
assert _spec and _spec.loader
logs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(logs)
pod, node, event, ts = logs.pod, logs.node, logs.event, logs.ts


def write(tmp: Path, watch: list[dict[str, Any]], nodes: list[dict[str, Any]]) -> tuple[str, str]:
    w, n = tmp / "pods.watch.jsonl", tmp / "nodes.json"
    w.write_text("".join(json.dumps(e) + "\n" for e in watch))
    n.write_text(json.dumps({"apiVersion": "v1", "kind": "NodeList", "items": nodes}, indent=4))
    return str(w), str(n)


def audit(tmp: Path, watch: list[dict[str, Any]], nodes: list[dict[str, Any]], bound: str = "1",
          **opts: Any) -> tuple[dict[str, Any], str]:
    w, n = write(tmp, watch, nodes)
    results, text = audit_path(w, parse_bound(bound), "auto", n, K8sAuditOptions(progress=False, **opts))
    return {r.claim_id: r for r in results}, text


@pytest.fixture
def example(tmp_path: Path) -> dict[str, Path]:
    return logs.write(tmp_path)  # type: ignore[no-any-return]


def test_example_history(example: dict[str, Path]) -> None:
    assert detect_format(str(example["pods"])) == "k8s"
    results, text = audit_path(str(example["pods"]), parse_bound("1/4"), "auto", str(example["nodes"]),
                               K8sAuditOptions(events_file=str(example["events"]), progress=False))
    r = {x.claim_id: x for x in results}
    assert r["audit.valid"].verdict is Verdict.HOLDS  # finished pods freed their GPUs, no false finding
    assert r["audit.sif"].verdict is Verdict.VIOLATED
    assert r["audit.sif"].counterexample["pod"] == "ml/prep-2"
    assert r["audit.sif"].counterexample["node"] == "gpu-b"
    assert r["audit.sif"].counterexample["time"] == ts(6)
    series = r["audit.sif"].stats["SIF over time"]
    assert [(x["line"], x["SIF"]) for x in series] == [(2, "1/4"), (3, "1/2"), (12, "1/4"), (15, "1/3"), (17, "0")]
    assert series[3]["time"] == ts(2000)  # gpu-d leaves (N = 3) at the clock of the last record before it
    stats = r["audit.valid"].stats
    assert stats["skipped: records of pods without GPUs"] == 1
    assert stats["skipped: records of pods lost with their removed node"] == 1
    assert stats["pods lost with their node"] == 1 and stats["nodes removed"] == 1
    assert stats["nodes without GPUs (not in N)"] == 1
    assert stats["gangs (pod groups) seen"] == 1
    waits = r["audit.waits"].stats
    blocked = {w["unit"]: w for w in waits["waits"] if w["first fragmentation"]}
    assert set(blocked) == {"ml/train-big", "ml/eval-x"}
    big = blocked["ml/train-big"]
    assert big["end"] == "bound" and big["waited s"] == 1805 - 60
    assert big["seconds by cause"]["fragmentation"] == 1800 - 60
    ff = big["first fragmentation"]
    assert ff["free GPUs"] == 8 and ff["min migrations to admit"] == 1 and ff["admit status"] == "optimal"
    assert {(x["node"], x["free"]) for x in ff["free per node"]} == {("gpu-a", 4), ("gpu-b", 4)}
    assert big["failed scheduling events"] == 12
    assert blocked["ml/eval-x"]["end"] == "deleted before binding"
    assert waits["pods blocked by fragmentation"] == 2
    assert "ml/train-big (1×8 GPUs)" in text and "1 migration(s) would admit it" in text
    assert "2 FailedScheduling, 1 Scheduled, 1 other events skipped" in text
    gang = next(w for w in waits["waits"] if w["gang"])
    assert gang["pods"] == ["ml/llm-ft-0", "ml/llm-ft-1"] and gang["end"] == "bound"


def test_deleted_pod_never_scheduled_is_no_finding(tmp_path: Path) -> None:
    watch = [event("ADDED", pod("a", 2, 0, "g1", 1, "Running")),
             event("ADDED", pod("never", 4, 5)), event("DELETED", pod("never", 4, 5, deleted=50))]
    r, _ = audit(tmp_path, watch, [node("g1", 8)])
    assert r["audit.valid"].verdict is Verdict.HOLDS
    (w,) = [w for w in r["audit.waits"].stats["waits"] if w["unit"] == "ml/never"]
    assert w["end"] == "deleted before binding" and w["seconds by cause"] == {"a node had room (another constraint)": 45.0}


def test_finished_pods_free_their_gpus(tmp_path: Path) -> None:
    watch = [event("ADDED", pod("a", 8, 0, "g1", 1, "Running")),
             event("MODIFIED", pod("a", 8, 0, "g1", 1, "Succeeded", finished=10)),
             event("ADDED", pod("b", 8, 11, "g1", 12, "Running")),
             event("DELETED", pod("a", 8, 0, "g1", 1, "Succeeded", finished=10, deleted=20))]
    r, _ = audit(tmp_path, watch, [node("g1", 8)])
    assert r["audit.valid"].verdict is Verdict.HOLDS
    assert r["audit.valid"].stats["skipped: records that change no GPU binding"] == 1


def test_over_capacity_and_cpu_node_findings_name_pod_node_time(tmp_path: Path) -> None:
    watch = [event("ADDED", pod("a", 6, 0, "g1", 1, "Running")), event("ADDED", pod("b", 4, 0, "g1", 3, "Running"))]
    r, text = audit(tmp_path, watch, [node("g1", 8)])
    bad = r["audit.valid"].counterexample
    assert r["audit.valid"].verdict is Verdict.VIOLATED and bad["line"] == 2
    assert (bad["pod"], bad["node"], bad["time"]) == ("ml/b", "g1", ts(3))
    assert "line 2 (pod ml/b, node g1, " in text and "10 GPUs used > capacity 8" in text
    r, _ = audit(tmp_path, [event("ADDED", pod("c", 1, 0, "cpu-1", 1, "Running")),
                            event("MODIFIED", pod("c", 1, 0, "cpu-1", 1, "Running")),
                            event("DELETED", pod("c", 1, 0, "cpu-1", 1, "Running", deleted=5)),
                            event("ADDED", pod("d", 1, 0, "g1", 1, "Running"))], [node("g1", 8), node("cpu-1", None)])
    assert "bound to node cpu-1, which has no GPUs" in r["audit.valid"].message
    assert r["audit.valid"].stats["invalid lines"] == 1  # reported once, not on every later record
    assert r["audit.valid"].stats["skipped: records that change no GPU binding"] == 2


def test_nodes_join_and_leave_change_n(tmp_path: Path) -> None:
    # g2 joins, a pod runs on it, g2 leaves with the pod: N goes 1 -> 2 -> 1
    watch = [event("ADDED", pod("a", 4, 0, "g1", 1, "Running")), event("ADDED", node("g2", 8)),
             event("ADDED", pod("b", 4, 2, "g2", 3, "Running")), event("DELETED", node("g2", 8)),
             event("DELETED", pod("b", 4, 2, "g2", 3, "Running", deleted=9))]
    r, text = audit(tmp_path, watch, [node("g1", 8)], bound="0")
    # after b binds: Φπ = 2 (both half full), Φ★ = 0 on N = 2: SIF 1 at line 3
    bad = r["audit.sif"].counterexample
    assert (bad["line"], bad["N"], bad["Φπ"], bad["Φ★"]) == (3, 2, 2, 0)
    assert r["audit.valid"].stats["nodes joined"] == 1 and r["audit.valid"].stats["pods lost with their node"] == 1
    assert r["audit.valid"].verdict is Verdict.HOLDS


def test_cordoned_node_offers_no_room(tmp_path: Path) -> None:
    watch = [event("ADDED", node("g2", 8, unschedulable=True)), event("ADDED", pod("w", 8, 0)),
             event("MODIFIED", node("g2", 8)), event("MODIFIED", pod("w", 8, 0, "g2", 30, "Running"))]
    r, _ = audit(tmp_path, watch, [node("g1", 8, unschedulable=False)] + [node("g2", 8, unschedulable=True)])
    (w,) = r["audit.waits"].stats["waits"]
    assert r["audit.valid"].stats["uncordons"] == 1
    assert w["first fragmentation"] is None and w["end"] == "bound"


def test_mig_and_fractional_pods_counted_not_errors(tmp_path: Path) -> None:
    frac = pod("f", 1, 0, "g1", 1, "Running")
    frac["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "500m"}}
    mig = pod("m", 1, 0, "g1", 1, "Running")
    mig["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/mig-3g.20gb": "1"}}
    r, _ = audit(tmp_path, [event("ADDED", frac), event("ADDED", mig), event("ADDED", pod("a", 2, 0, "g1", 1, "Running"))],
                 [node("g1", 8)])
    s = r["audit.valid"].stats
    assert s["skipped: records of pods with fractional GPU requests"] == 1
    assert s["skipped: records of pods with MIG slices"] == 1


def test_cause_classification() -> None:
    assert cause([4, 4], [8, 8], 8, 1) is WaitCause.FRAGMENTATION
    assert cause([4, 3], [8, 8], 8, 1) is WaitCause.TOO_FEW_FREE
    assert cause([8, 0], [8, 8], 8, 1) is WaitCause.FITS
    assert cause([4, 4], [4, 4], 8, 1) is WaitCause.NO_NODE_LARGE_ENOUGH
    assert cause([4, 4, 3, 2], [8, 8, 8, 8], 4, 3) is WaitCause.FRAGMENTATION  # a gang of 3×4 on 13 free


def test_cli_exit_codes_and_reports(example: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junit, js = tmp_path / "a.xml", tmp_path / "a.json"
    rc = verify_main(["--audit", str(example["pods"]), "--nodes-file", str(example["nodes"]), "--bound", "1/2",
                      "--k8s-events", str(example["events"]), "--junit", str(junit), "--json", str(js), "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "checked 10 lines: 10 valid, 0 invalid" in out and "audit.waits: MEASURED" in out
    assert '"invalid lines": 0' in junit.read_text() and "skipped: records of pods without GPUs" in junit.read_text()
    assert json.loads(js.read_text())["results"][2]["stats"]["pods blocked by fragmentation"] == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(event("ADDED", pod("a", 2, 0))) + "\n" + json.dumps({"type": "ADDED", "object": {
        "kind": "Pod", "metadata": {"name": "b"}, "spec": {"containers": [{"resources": {"requests": {
            "nvidia.com/gpu": "lots"}}}]}}}) + "\n")
    assert verify_main(["--audit", str(bad), "--nodes-file", str(example["nodes"]), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl:2" in err and "object.spec.containers[0].resources.requests.nvidia.com/gpu" in err
    assert verify_main(["--gang-label", "x"]) == 2


def test_custom_gpu_resource(tmp_path: Path) -> None:
    p = pod("a", 2, 0, "g1", 1, "Running")
    p["spec"]["containers"][0]["resources"] = {"limits": {"amd.com/gpu": "2"}}
    n = node("g1", None)
    n["status"]["allocatable"]["amd.com/gpu"] = "8"
    from proofs_check.gpu.k8s_events import K8sOptions
    r, _ = audit(tmp_path, [event("ADDED", p)], [n], read=K8sOptions(("amd.com/gpu",)))
    assert r["audit.sif"].bounds["lines"] == 1 and r["audit.valid"].verdict is Verdict.HOLDS


def test_snapshot_report_says_invalid_lines_were_not_checked(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    over = {"nodes": 1, "placement": [[{"job": "a", "g": 8}, {"job": "b", "g": 8}]]}
    f.write_text("\n".join(json.dumps(x) for x in [over, over, {"nodes": 1, "placement": [[{"job": "c", "g": 8}]]}]) + "\n")
    results, text = audit_path(str(f), parse_bound("2"))
    assert "checked 3 lines: 1 valid, 2 invalid" in text
    assert "(2 invalid lines not checked)" in results[1].message
    assert results[1].bounds["invalid lines"] == 2


def test_docs_end_to_end_example_prints_what_docs_show(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/verify.md's kubectl example, run as pasted from the repository root on the shipped
    files (which make_k8s_logs.py writes unchanged), prints the output the page shows."""
    import re
    import shlex
    import shutil

    doc = (ROOT / "docs" / "verify.md").read_text()
    section = doc[doc.index("**End to end** (paste from the repository root"):]
    cmd, shown = re.findall(r"```(?:bash)?\n(.*?)```", section, re.S)[:2]
    fresh = tmp_path / "fresh"
    logs.write(fresh)
    for name in ("nodes.json", "pods.watch.jsonl", "events.json"):
        assert (fresh / name).read_text() == (ROOT / "examples" / "k8s" / name).read_text(), name
    for name in ("examples",):
        shutil.copytree(ROOT / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(cmd.replace("\\\n", " "))
    assert argv[0] == "verify"
    rc = verify_main(argv[1:] + ["--quiet"])
    out = capsys.readouterr().out
    assert rc == 1
    strip = lambda text: [re.sub(r" \[[\d.]+s\]$", "", line) for line in text.strip().splitlines()]  # noqa: E731
    assert strip(out) == strip(shown)
    assert (tmp_path / "audit.json").exists() and (tmp_path / "audit.xml").exists()


def test_pretty_printed_pod_list_is_detected_and_audited(tmp_path: Path) -> None:
    """`kubectl get pods -A -o json` (indented, a List of Pods) as the audit log: one line per
    running pod; a pending pod is a wait to the end of the log."""
    f = tmp_path / "pods.json"
    items = [pod("a", 4, 0, "g1", 1, "Running"), pod("b", 4, 0, "g2", 1, "Running"), pod("c", 8, 5),
             pod("d", 2, 0, "g1", 1, "Succeeded", finished=3)]
    f.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=4))
    _, n = write(tmp_path, [], [node("g1", 8), node("g2", 8)])
    assert detect_format(str(f)) == "k8s"
    results, text = audit_path(str(f), parse_bound("0"), "auto", n, K8sAuditOptions(progress=False))
    r = {x.claim_id: x for x in results}
    assert r["audit.sif"].bounds["lines"] == 2 and r["audit.sif"].verdict is Verdict.VIOLATED
    (w,) = r["audit.waits"].stats["waits"]
    assert w["unit"] == "ml/c" and w["end"] == "still waiting at the end of the log"
    assert w["first fragmentation"]["free GPUs"] == 8

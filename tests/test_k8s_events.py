"""Reading kubectl's formats (proofs_check.gpu.k8s_events): GPUs of a pod, gangs, documents,
Events, NodeLists; bad input names file, line and field (issue 24, item 1)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from proofs_check.gpu.audit_tally import AuditError
from proofs_check.gpu.k8s_events import (
    Change,
    EventReason,
    GpuKind,
    K8sOptions,
    Skipped,
    SkipReason,
    WatchType,
    changes,
    gang_of,
    pod_gpus,
    read_pod,
    scheduling_events,
)
from proofs_check.gpu.node_list import read_node_list


def container(requests: dict[str, object] | None = None, limits: dict[str, object] | None = None) -> dict[str, object]:
    res: dict[str, object] = {}
    if requests is not None:
        res["requests"] = requests
    if limits is not None:
        res["limits"] = limits
    return {"name": "c", "image": "i", "resources": res}


def gpus(spec: dict[str, object], resources: tuple[str, ...] = ("nvidia.com/gpu",)) -> tuple[int, GpuKind]:
    return pod_gpus(spec, "f:1", "object", resources)


def test_gpus_are_max_of_container_sum_and_largest_init_container() -> None:
    spec = {"containers": [container({"nvidia.com/gpu": "2"}), container(limits={"nvidia.com/gpu": "1"})],
            "initContainers": [container(limits={"nvidia.com/gpu": "2"})]}
    assert gpus(spec) == (3, GpuKind.WHOLE)
    spec["initContainers"] = [container({"nvidia.com/gpu": 4})]
    assert gpus(spec) == (4, GpuKind.WHOLE)


def test_requests_before_limits_and_no_gpu() -> None:
    assert gpus({"containers": [container({"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "1"})]}) == (1, GpuKind.WHOLE)
    assert gpus({"containers": [container({"cpu": "4"})]}) == (0, GpuKind.NONE)


def test_fractional_and_mig_are_marked_never_errors() -> None:
    assert gpus({"containers": [container({"nvidia.com/gpu": "500m"})]})[1] is GpuKind.FRACTIONAL
    assert gpus({"containers": [container({"nvidia.com/gpu": "0.5"})]})[1] is GpuKind.FRACTIONAL
    assert gpus({"containers": [container({"nvidia.com/gpu": "1000m"})]}) == (1, GpuKind.WHOLE)
    assert gpus({"containers": [container(limits={"nvidia.com/mig-1g.5gb": "1"})]})[1] is GpuKind.MIG


def test_resource_names_are_configurable() -> None:
    spec = {"containers": [container({"amd.com/gpu": "2", "nvidia.com/gpu": "1"})]}
    assert gpus(spec, ("amd.com/gpu",)) == (2, GpuKind.WHOLE)
    assert gpus(spec, ("amd.com/gpu", "nvidia.com/gpu")) == (3, GpuKind.WHOLE)


def test_bad_quantity_names_the_field() -> None:
    with pytest.raises(AuditError) as e:
        gpus({"containers": [container({"nvidia.com/gpu": "two"})]})
    assert "f:1" in str(e.value) and "spec.containers[0].resources.requests.nvidia.com/gpu" in str(e.value)


@pytest.mark.parametrize("source,key", [("labels", "scheduling.x-k8s.io/pod-group"),
                                        ("labels", "pod-group.scheduling.sigs.k8s.io"),
                                        ("labels", "kueue.x-k8s.io/pod-group-name"),
                                        ("annotations", "scheduling.k8s.io/group-name"),
                                        ("labels", "my.org/gang")])
def test_gangs_from_common_keys_or_a_user_key(source: str, key: str) -> None:
    meta = {"name": "p", source: {key: "g1"}}
    assert gang_of(meta, "ml", K8sOptions(gang_key="my.org/gang")) == "ml/g1"
    if key == "my.org/gang":
        assert gang_of(meta, "ml", K8sOptions()) is None


def pod_obj(name: str, node: str | None = None, phase: str = "Pending", **extra: object) -> dict[str, object]:
    spec: dict[str, object] = {"containers": [container({"nvidia.com/gpu": "2"})]}
    if node:
        spec["nodeName"] = node
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "ml", "uid": "u-1",
                                        "creationTimestamp": "2026-05-01T09:00:00Z"},
            "spec": spec, "status": {"phase": phase}, **extra}


def test_unknown_fields_ignored_and_pod_read() -> None:
    p = read_pod(pod_obj("a", "n1", "Running", managedFields=[{"x": 1}]), "f:1", "object", K8sOptions())
    assert (p.key, p.node, p.gpus, p.holds_gpus) == ("ml/a", "n1", 2, True)
    assert p.created is not None
    done = read_pod(pod_obj("a", "n1", "Succeeded"), "f:1", "object", K8sOptions())
    assert not done.holds_gpus


def test_watch_stream_json_lines_and_pretty_printed(tmp_path: Path) -> None:
    events = [{"type": "ADDED", "object": pod_obj("a")}, {"type": "BOOKMARK", "object": {"kind": "Pod"}},
              {"type": "MODIFIED", "object": pod_obj("a", "n1", "Running")},
              {"type": "DELETED", "object": pod_obj("a", "n1", "Running")},
              {"type": "ADDED", "object": {"kind": "ConfigMap", "metadata": {"name": "x"}}}]
    lines, pretty = tmp_path / "w.jsonl", tmp_path / "w.json"
    lines.write_text("".join(json.dumps(e) + "\n" for e in events))
    pretty.write_text("".join(json.dumps(e, indent=4) + "\n" for e in events))
    for path in (lines, pretty):
        recs = list(changes(str(path), K8sOptions()))
        assert [r.type for r in recs if isinstance(r, Change)] == [WatchType.ADDED, WatchType.MODIFIED, WatchType.DELETED]
        assert [r.reason for r in recs if isinstance(r, Skipped)] == [SkipReason.BOOKMARK, SkipReason.OTHER_KIND]
    third = [r for r in changes(str(pretty), K8sOptions())][2]
    assert third.where.startswith(f"{pretty}:") and third.lineno > 20


def test_invalid_json_and_bad_type_name_the_line(tmp_path: Path) -> None:
    f = tmp_path / "w.jsonl"
    f.write_text(json.dumps({"type": "ADDED", "object": pod_obj("a")}) + "\n{\"type\": \n")
    with pytest.raises(AuditError, match=r"w.jsonl:2.*invalid JSON"):
        list(changes(str(f), K8sOptions()))
    f.write_text(json.dumps({"type": "UPSERT", "object": pod_obj("a")}) + "\n")
    with pytest.raises(AuditError, match=r"w.jsonl:1.*field 'type'"):
        list(changes(str(f), K8sOptions()))
    f.write_text(json.dumps({"type": "ADDED", "object": {"kind": "Pod", "metadata": {}}}) + "\n")
    with pytest.raises(AuditError, match=r"object.metadata.name"):
        list(changes(str(f), K8sOptions()))


def test_pod_list_items_are_added_events(tmp_path: Path) -> None:
    f = tmp_path / "pods.json"
    items = [pod_obj("a", "n1", "Running"), pod_obj("b")]
    for it in items:
        del it["kind"]  # a PodList's items may leave out their kind
    f.write_text(json.dumps({"apiVersion": "v1", "kind": "PodList", "items": items}, indent=2))
    recs = [r for r in changes(str(f), K8sOptions()) if isinstance(r, Change)]
    assert [(r.type, r.obj.key) for r in recs] == [(WatchType.ADDED, "ml/a"), (WatchType.ADDED, "ml/b")]  # type: ignore[union-attr]


def test_events_list_core_and_events_v1(tmp_path: Path) -> None:
    f = tmp_path / "events.json"
    items = [
        {"kind": "Event", "reason": "FailedScheduling", "message": "0/4 nodes are available",
         "involvedObject": {"kind": "Pod", "name": "a", "namespace": "ml"}, "count": 3,
         "firstTimestamp": "2026-05-01T09:00:00Z", "lastTimestamp": "2026-05-01T09:05:00Z"},
        {"kind": "Event", "reason": "Scheduled", "note": "Successfully assigned ml/a to n1",
         "regarding": {"kind": "Pod", "name": "a", "namespace": "ml"}, "eventTime": "2026-05-01T09:06:00.000000Z"},
        {"kind": "Event", "reason": "Pulled", "involvedObject": {"kind": "Pod", "name": "a"}},
        {"kind": "Event", "reason": "FailedScheduling", "involvedObject": {"kind": "Job", "name": "j"}},
    ]
    f.write_text(json.dumps({"kind": "EventList", "items": items}, indent=2))
    events, skipped = scheduling_events(str(f))
    assert skipped == 2
    assert [(e.pod, e.reason, e.count) for e in events] == [("ml/a", EventReason.FAILED_SCHEDULING, 3),
                                                            ("ml/a", EventReason.SCHEDULED, 1)]
    assert events[0].last is not None and events[0].first is not None and events[0].last - events[0].first == 300


def node_obj(name: str, gpus: str | None) -> dict[str, object]:
    alloc = {"cpu": "8"} | ({"nvidia.com/gpu": gpus} if gpus is not None else {})
    return {"kind": "Node", "metadata": {"name": name, "uid": "x"}, "status": {"allocatable": alloc}}


def test_node_list_as_kubectl_writes_it_is_a_nodes_file(tmp_path: Path) -> None:
    f = tmp_path / "nodes.json"
    f.write_text(json.dumps({"apiVersion": "v1", "kind": "NodeList",
                             "items": [node_obj("g1", "8"), node_obj("g2", "4"), node_obj("cpu", None)]}, indent=4))
    cluster = read_node_list(str(f))
    assert cluster.capacities == (8, 4) and cluster.names == ("g1", "g2") and cluster.gpu_less == {"cpu"}

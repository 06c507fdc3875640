"""Write a small Kubernetes history in exactly kubectl's formats (docs/verify.md, the kubectl example).

    python examples/k8s/make_k8s_logs.py [DIR]      # default: examples/k8s/

Files written:

* ``nodes.json`` — ``kubectl get nodes -o json``: a NodeList of two 8-GPU nodes, two 4-GPU nodes
  and a CPU node (``status.allocatable["nvidia.com/gpu"]`` as strings);
* ``pods.watch.jsonl`` — ``kubectl get pods -A -w -o json --output-watch-events`` (one event a
  line): pods arriving, bound (``spec.nodeName``, the PodScheduled condition), finishing
  (``Succeeded``, not deleted), deleted; a gang of two 4-GPU pods (coscheduling label); a pod that
  never schedules and is deleted; an 8-GPU pod that waits while 8 GPUs are free on two nodes
  (fragmentation) until a pod finishes; a node removed while a pod runs on it;
* ``events.json`` — ``kubectl get events -A -o json``: Scheduled and FailedScheduling events.

The history is the one the tests check (tests/test_k8s_audit.py builds the same objects).
"""
from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

T0 = datetime(2026, 5, 1, 9, 0, 0, tzinfo=timezone.utc)


def ts(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def node(name: str, gpus: int | None, unschedulable: bool = False) -> dict[str, Any]:
    alloc = {"cpu": "64", "memory": "512Gi", "pods": "110"}
    if gpus is not None:
        alloc["nvidia.com/gpu"] = str(gpus)
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": f"uid-{name}", "creationTimestamp": ts(-86400),
                         "labels": {"kubernetes.io/hostname": name}},
            "spec": {"unschedulable": True} if unschedulable else {},
            "status": {"capacity": dict(alloc), "allocatable": alloc,
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name: str, gpus: int, created: float, node_name: str | None = None, scheduled: float | None = None,
        phase: str = "Pending", finished: float | None = None, deleted: float | None = None,
        labels: dict[str, str] | None = None, init_gpus: int = 0, unschedulable: str | None = None,
        namespace: str = "ml") -> dict[str, Any]:
    resources = {"limits": {"nvidia.com/gpu": str(gpus)}, "requests": {"cpu": "4", "nvidia.com/gpu": str(gpus)}} \
        if gpus else {"requests": {"cpu": "1"}}
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "train:1", "resources": resources}],
                            "schedulerName": "default-scheduler", "restartPolicy": "Never"}
    if init_gpus:
        spec["initContainers"] = [{"name": "warm", "image": "warm:1",
                                   "resources": {"limits": {"nvidia.com/gpu": str(init_gpus)}}}]
    if node_name:
        spec["nodeName"] = node_name
    conditions: list[dict[str, Any]] = []
    if scheduled is not None:
        conditions.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": ts(scheduled)})
    elif unschedulable:
        conditions.append({"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                           "message": unschedulable, "lastTransitionTime": ts(created)})
    status: dict[str, Any] = {"phase": phase, "conditions": conditions, "qosClass": "Burstable"}
    if finished is not None:
        status["containerStatuses"] = [{"name": "main", "ready": False, "restartCount": 0,
                                        "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                                                                 "finishedAt": ts(finished)}}}]
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                            "creationTimestamp": ts(created), "resourceVersion": "1"}
    if labels:
        meta["labels"] = labels
    if deleted is not None:
        meta["deletionTimestamp"] = ts(deleted)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def event(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "object": obj}


GANG = {"scheduling.x-k8s.io/pod-group": "llm-ft"}
WAIT_MSG = "0/5 nodes are available: 1 node(s) didn't match Pod's node affinity, 4 Insufficient nvidia.com/gpu."


def history() -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(nodes, watch events, scheduler events) of the example."""
    nodes = [node("gpu-a", 8), node("gpu-b", 8), node("gpu-c", 4), node("gpu-d", 4), node("cpu-1", None)]
    w: list[dict[str, Any]] = []
    # a 4-GPU pod on gpu-a, a 4-GPU pod on gpu-b, a CPU-only pod
    w.append(event("ADDED", pod("prep-1", 4, 0)))
    w.append(event("MODIFIED", pod("prep-1", 4, 0, "gpu-a", 2, "Running")))
    w.append(event("ADDED", pod("prep-2", 4, 5, "gpu-b", 6, "Running")))
    w.append(event("ADDED", pod("web-1", 0, 5, "cpu-1", 6, "Running")))
    # a gang of two 4-GPU pods (coscheduling plugin label) on gpu-c and gpu-d
    w.append(event("ADDED", pod("llm-ft-0", 4, 10, labels=GANG)))
    w.append(event("ADDED", pod("llm-ft-1", 4, 10, labels=GANG)))
    w.append(event("MODIFIED", pod("llm-ft-0", 4, 10, "gpu-c", 12, "Running", labels=GANG)))
    w.append(event("MODIFIED", pod("llm-ft-1", 4, 10, "gpu-d", 12, "Running", labels=GANG)))
    # an 8-GPU pod: 8 GPUs free (4 on gpu-a, 4 on gpu-b) but no node has 8: fragmentation
    w.append(event("ADDED", pod("train-big", 8, 60, unschedulable=WAIT_MSG)))
    # a pod asking for a whole 8-GPU node by its init container, never scheduled, deleted
    w.append(event("ADDED", pod("eval-x", 1, 70, init_gpus=8, unschedulable=WAIT_MSG)))
    w.append(event("DELETED", pod("eval-x", 1, 70, init_gpus=8, deleted=400)))
    # prep-1 finishes (Succeeded, not deleted): its 4 GPUs are free, gpu-a is empty
    w.append(event("MODIFIED", pod("prep-1", 4, 0, "gpu-a", 2, "Succeeded", finished=1800)))
    w.append(event("MODIFIED", pod("train-big", 8, 60, "gpu-a", 1805, "Running")))
    # the finished pod is deleted later: no change to the GPUs
    w.append(event("DELETED", pod("prep-1", 4, 0, "gpu-a", 2, "Succeeded", finished=1800, deleted=2000)))
    # gpu-d is removed while llm-ft-1 runs on it; the pod's later records are of a lost pod
    w.append(event("DELETED", node("gpu-d", 4)))
    w.append(event("DELETED", pod("llm-ft-1", 4, 10, "gpu-d", 12, "Failed", deleted=2300, labels=GANG)))
    # the rest finish
    w.append(event("DELETED", pod("prep-2", 4, 5, "gpu-b", 6, "Succeeded", finished=3000, deleted=3000)))
    w.append(event("DELETED", pod("llm-ft-0", 4, 10, "gpu-c", 12, "Succeeded", finished=3600, deleted=3600,
                                  labels=GANG)))
    w.append(event("DELETED", pod("train-big", 8, 60, "gpu-a", 1805, "Succeeded", finished=7200, deleted=7200)))
    ev = [scheduler_event("train-big", "FailedScheduling", 61, 1790, 12, WAIT_MSG),
          scheduler_event("train-big", "Scheduled", 1805, 1805, 1, "Successfully assigned ml/train-big to gpu-a"),
          scheduler_event("eval-x", "FailedScheduling", 71, 390, 6, WAIT_MSG),
          {"kind": "Event", "metadata": {"name": "x", "namespace": "ml"}, "reason": "Pulled",
           "involvedObject": {"kind": "Pod", "name": "prep-1", "namespace": "ml"}, "message": "image pulled"}]
    return nodes, w, ev


def scheduler_event(pod_name: str, reason: str, first: float, last: float, count: int, message: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{pod_name}.{reason}", "namespace": "ml"},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": pod_name, "namespace": "ml"},
            "reason": reason, "message": message, "type": "Warning" if reason != "Scheduled" else "Normal",
            "firstTimestamp": ts(first), "lastTimestamp": ts(last), "count": count,
            "source": {"component": "default-scheduler"}}


def write(out: Path) -> dict[str, Path]:
    """Write the three files into ``out``; returns their paths."""
    nodes, watch, events = history()
    out.mkdir(parents=True, exist_ok=True)
    paths = {"nodes": out / "nodes.json", "pods": out / "pods.watch.jsonl", "events": out / "events.json"}
    paths["nodes"].write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes,
                                          "metadata": {"resourceVersion": ""}}, indent=4) + "\n")
    paths["pods"].write_text("".join(json.dumps(e) + "\n" for e in watch))
    paths["events"].write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": events,
                                           "metadata": {"resourceVersion": ""}}, indent=4) + "\n")
    return paths


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent
    for p in write(target).values():
        print(p)

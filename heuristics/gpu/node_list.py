"""A heterogeneous GPU cluster: the openb node list (FGD, ATC'23; /work/shared/TRACES.md).

Format (``openb_node_list_gpu_node.csv``): header ``sn,cpu_milli,memory_mib,gpu,model``, one node
per row. Used here: ``sn`` (the node's name, unique), ``gpu`` (GPUs on the node, 1..8) and
``model`` (its GPU model, e.g. G2, T4, V100M32; matched by pods' ``gpu_spec``). CPU and memory
columns are not part of the GPU-packing model and are not required.

Errors (``NodeListError``, a ``TraceError``: one line ``file:line: field 'F': problem``, exit 2 in
every program): a missing column, an empty field, a ``gpu`` that is not an integer in 0..8, an
empty model, a duplicate ``sn``, a list with no GPU node. A node with ``gpu`` = 0 (a CPU-only
node) is not an error: it is filtered and counted in :attr:`NodeList.cpu_only`, never dropped
silently. Capacities above 8 are refused: every scheduler here places instances of at most 8
GPUs on nodes of at most 8 (the COMPASS-ABS model, seeds/000 §3).

The cluster description is plain immutable data: node capacities and models in file order, and
the 8-GPU partition hierarchical COMPASS runs on (its multi-node instances take whole 8-GPU nodes).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from heuristics.gpu.cluster import G_DEFAULT
from heuristics.gpu.trace import TraceError
from heuristics.gpu.trace_loaders import read_rows

NODE_COLUMNS = ("sn", "gpu", "model")


class NodeListError(TraceError):
    """A node list that cannot be read (same one-line shape as a trace error)."""


class GpuNode(NamedTuple):
    """One node: name, GPUs, model, and the file line it came from."""

    name: str
    capacity: int
    model: str
    line: int


@dataclass(frozen=True)
class NodeList:
    """The GPU nodes of a cluster in file order; ``cpu_only`` counts the rows with 0 GPUs."""

    source: str
    nodes: tuple[GpuNode, ...]
    cpu_only: int = 0

    @property
    def n_nodes(self) -> int:
        return len(self.nodes)

    @property
    def capacities(self) -> tuple[int, ...]:
        return tuple(n.capacity for n in self.nodes)

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(n.model for n in self.nodes)

    @property
    def total_gpus(self) -> int:
        return sum(self.capacities)

    @property
    def is_uniform(self) -> bool:
        """Every node has the same capacity (a plain N × G cluster)."""
        return len(set(self.capacities)) <= 1

    def partition(self, capacity: int) -> NodeList:
        """The nodes of exactly ``capacity`` GPUs (e.g. the 8-GPU partition hierarchical COMPASS runs on)."""
        return NodeList(f"{self.source}[{capacity}-GPU nodes]",
                        tuple(n for n in self.nodes if n.capacity == capacity), 0)

    def composition(self) -> dict[tuple[int, str], int]:
        """Node count per (capacity, model), largest capacity first."""
        c = Counter((n.capacity, n.model) for n in self.nodes)
        return dict(sorted(c.items(), key=lambda kv: (-kv[0][0], kv[0][1])))

    def summary(self) -> str:
        """One line: nodes and GPUs per capacity, models, filtered rows."""
        by_cap = Counter(self.capacities)
        parts = ", ".join(f"{by_cap[c]}×{c}-GPU" for c in sorted(by_cap, reverse=True))
        models = ", ".join(sorted(set(self.models)))
        line = f"{self.source}: {self.n_nodes} GPU nodes ({parts}), {self.total_gpus} GPUs, models {models}"
        return line + (f"; {self.cpu_only} CPU-only rows (gpu = 0) filtered" if self.cpu_only else "")


def load_node_list(path: str | Path) -> NodeList:
    """Read and validate an openb node list (see the module docstring)."""
    p = str(path)
    nodes: list[GpuNode] = []
    seen: dict[str, int] = {}
    cpu_only = 0
    try:
        for row in read_rows(path, NODE_COLUMNS):
            name, model = row.text("sn"), row.text("model")
            gpus = row.count("gpu")
            if gpus > G_DEFAULT:
                raise row.error("gpu", f"{gpus} GPUs: nodes of at most {G_DEFAULT} GPUs are supported")
            if name in seen:
                raise row.error("sn", f"duplicate node {name!r} (first on line {seen[name]})")
            seen[name] = row.line
            if gpus == 0:
                cpu_only += 1
                continue
            nodes.append(GpuNode(name, gpus, model, row.line))
    except NodeListError:
        raise
    except TraceError as e:  # read_rows' own errors, re-typed so callers can tell the file kind
        raise NodeListError(e.path, e.line, e.field, e.problem) from None
    if not nodes:
        raise NodeListError(p, 0, "gpu", "no node with GPUs in the list")
    return NodeList(p, tuple(nodes), cpu_only)


def uniform_node_list(n_nodes: int, capacity: int = G_DEFAULT, model: str = "") -> NodeList:
    """``n_nodes`` identical nodes (what ``--nodes N`` means), for code that takes a NodeList."""
    return NodeList(f"{n_nodes}×{capacity}-GPU", tuple(GpuNode(f"node-{i}", capacity, model, 0) for i in range(n_nodes)))

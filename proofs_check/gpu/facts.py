"""The quantities of one GPU-cluster step that the flat claims read, each computed at most once.

Φ★ comes from the exact oracle (pattern ILP, memoised on (counts, N)); a solve that hits its
limit raises :class:`~proofs_check.core.model.Undecided`, so the step makes its claim
inconclusive instead of deciding it.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any

from heuristics.gpu.abs_space import POOL, SLOTTED, AbsView
from heuristics.gpu.policy import Migration
from oracle.gpu.phi_star import phi_star as oracle_phi_star
from oracle.result import Status
from proofs_check.core.model import Step, Undecided
from proofs_check.gpu.events import Event, FlatState, counts_of_state, used_per_node


def exact_phi_star(counts: tuple[int, ...], n_nodes: int) -> int:
    """Exact Φ★ of n_1..n_G = ``counts`` on N nodes of G = ``len(counts)`` GPUs (memoised by the
    oracle; a scheduler of 4-GPU nodes has four counts); a solver limit raises Undecided."""
    cert = oracle_phi_star(counts, n_nodes, len(counts))
    if cert.is_optimal and cert.objective is not None:
        return cert.objective
    if cert.status is Status.INFEASIBLE:
        raise RuntimeError(f"Φ★ infeasible for a reached state: counts {counts}, N={n_nodes}")
    raise Undecided(f"Φ★ solve for counts {counts}, N={n_nodes} hit its limit")


class Facts:
    """Lazily computed quantities of one step's state (and the event and migrations that led to
    it, for transition claims)."""

    __slots__ = ("key", "n_nodes", "capacity", "event", "migrations", "_counts", "_phi_pi", "_view", "_kinds")

    def __init__(self, key: FlatState, event: Event | None = None, migrations: tuple[Migration, ...] = ()):
        self.key = key
        self.n_nodes = len(key.nodes)
        self.capacity = key.capacity
        self.event, self.migrations = event, migrations
        self._counts: tuple[int, ...] | None = None
        self._phi_pi: int | None = None
        self._view = key if isinstance(key, AbsView) else None
        self._kinds: tuple[int, int, int] | None = None  # pool nodes, slotted nodes, pool units

    def __reduce__(self) -> tuple[Any, ...]:
        # A step's memo carries its Facts when the step is shipped to another shard: they pickle
        # as what they are computed from (in the opt-in compiled build a native class, which has
        # no default pickling), and compute their values again there
        return Facts, (self.key, self.event, self.migrations)

    @property
    def view(self) -> AbsView:
        if self._view is None:
            raise TypeError("this claim needs an ABS state (AbsView); the policy exposes a Placement")
        return self._view

    @property
    def counts(self) -> tuple[int, ...]:
        if self._counts is None:
            self._counts = counts_of_state(self.key, self.capacity)
        return self._counts

    @property
    def phi_pi(self) -> int:
        """Φπ: partial nodes of the state's placement."""
        if self._phi_pi is None:
            self._phi_pi = sum(1 for u in used_per_node(self.key) if 0 < u < self.capacity)
        return self._phi_pi

    def phi_star(self) -> int:
        """Exact Φ★ of the state's instance counts on N nodes."""
        return exact_phi_star(self.counts, self.n_nodes)

    def n_pool(self) -> int:
        return self._node_kinds()[0]

    def n_slotted(self) -> int:
        return self._node_kinds()[1]

    def pool_units(self) -> int:
        """1-GPU instances in pools, over all nodes."""
        return self._node_kinds()[2]

    def _node_kinds(self) -> tuple[int, int, int]:
        """(pool nodes, slotted nodes, pool units) in one walk of the nodes: the coverage
        counters of several claims read them for every state checked."""
        if self._kinds is None:
            pools = slotted = units = 0
            for nd in self.view.nodes:
                if nd.kind == POOL:
                    pools += 1
                elif nd.kind == SLOTTED:
                    slotted += 1
                units += len(nd.pool)
            self._kinds = (pools, slotted, units)
        return self._kinds


def facts(st: Step[FlatState, Event]) -> Facts:
    """The step's Facts, shared by every claim evaluated on it."""
    f = st.memo.get("facts")
    if f is None:
        f = st.memo["facts"] = Facts(st.state, st.action, st.detail)
        f._counts = st.memo.get("counts")  # a model may know them already (PolicyModel.step)
    return f


def sif_numbers(f: Facts) -> dict[str, Any]:
    """The figures a counterexample shows: N, Φπ, Φ★, SIF = (Φπ − Φ★)/N, counts."""
    out: dict[str, Any] = {"N": f.n_nodes, "counts": list(f.counts), "Φπ": f.phi_pi}
    try:
        ps = f.phi_star()
        out["Φ★"] = ps
        out["SIF"] = str(Fraction(f.phi_pi - ps, f.n_nodes))
    except Undecided as e:
        out["Φ★"] = f"unknown ({e})"
    return out

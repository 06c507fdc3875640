"""The ``policy.*`` claims and the ``measure.sif`` measurement, run once for every kind of state.

A :class:`Family` is what differs between the schedulers the claims run on — flat schedulers,
whose state is the object itself (``gpu.policy_claims``), and hier-compass, on its ``HierView``s
(``gpu.hier_policy``): its models per size, its claim tests, how its sizes are named, its
records. :func:`run_claims` and :func:`measure` are the one pipeline over any family: the claims
in one exploration over the sizes, the measurement as REACHABLE probes "Φπ − Φ★ ≥ j" per size.
"""
from __future__ import annotations

from typing import Any, Iterable, Protocol, Sequence

from proofs_check.core.engine import SERIAL, Engine
from proofs_check.core.model import Property
from proofs_check.core.search import Exploration, Finding, Limits, Progress, explore
from proofs_check.core.trace import Record
from proofs_check.core.verdict import ClaimResult, Explained, explored_verdict, size_row
from proofs_check.gpu.cutoff import Cutoff, every_n_measure, every_n_result, phi_star_stable
from proofs_check.gpu.flat_claims import Bounds
from proofs_check.gpu.policy_checks import ClaimTests, PolicyParams, SizeAxis, claim_property, gap_probe, \
    measured, probe_name


class Family(Protocol):
    """One kind of scheduler state the claims run on."""

    @property
    def tests(self) -> ClaimTests:
        """The claims' tests on this kind of state."""
        ...

    @property
    def axis(self) -> SizeAxis:
        """How the measurement names its sizes."""
        ...

    def label(self, params: PolicyParams) -> str:
        """The exploration's label (progress lines, the report's ``exploration``)."""
        ...

    def models(self, bounds: Bounds, params: PolicyParams, sizes: Iterable[int] | None,
               deadline: float | None) -> Iterable[Any]:
        """One state model per size (all of ``bounds``' sizes unless ``sizes``)."""
        ...

    def cutoff(self, bounds: Bounds, params: PolicyParams, deadline: float | None, progress: Progress | None,
               label: str) -> tuple[Cutoff | None, Sequence[int] | None]:
        """With ``--max-nodes all``: the checked cutoff and the sizes it asks for (else None, None)."""
        ...

    def says(self, bounds: Bounds) -> Explained:
        ...

    def bounds_row(self, bounds: Bounds, params: PolicyParams, cid: str | None) -> dict[str, Any]:
        """The report's bounds of claim ``cid`` (None: the measurement)."""
        ...

    def stats(self, exp: Exploration[Any, Any], bounds: Bounds) -> dict[str, Any]:
        """What the family adds to a claim's figures."""
        ...

    def record(self, cid: str, f: Finding[Any, Any], params: PolicyParams, **extra: Any) -> Record:
        ...

    def gaps(self, model: Any) -> tuple[int, str]:
        """The largest gap a size allows (its number of nodes at the GPU level) and its key in the
        measurement's "per size" figures."""
        ...


def run_claims(family: Family, claims: Sequence[str], bounds: Bounds, params: PolicyParams,
               every_n: dict[str, Any], engine: Engine = SERIAL, deadline: float | None = None,
               progress: Progress | None = None) -> list[ClaimResult]:
    """The claims in one exploration over the family's sizes (with ``--max-nodes all``, to its cutoff;
    ``every_n`` says what each claim reads, ``cutoff.EveryN``)."""
    label = family.label(params)
    props = [claim_property(c, params, family.tests) for c in claims]
    cut, sizes = family.cutoff(bounds, params, deadline, progress, label)
    exp = explore(family.models(bounds, params, sizes, deadline), props, Limits(bounds.depth, bounds.max_states),
                  engine, deadline, progress, label)
    phi = phi_star_stable(cut) if cut is not None and cut.confirmed and "policy.sif" in claims else None
    out = []
    for c, p in zip(claims, props):
        r = _result(family, c, p, exp, bounds, params, label)
        out.append(r if cut is None else every_n_result(r, p, every_n[c], cut, phi, bounds.min_nodes,
                                                         family.says(bounds).rest))
    return out


def _result(family: Family, cid: str, prop: Property[Any, Any], exp: Exploration[Any, Any], bounds: Bounds,
            params: PolicyParams, label: str) -> ClaimResult:
    o = exp.outcomes[prop.name]
    verdict, msg = explored_verdict(prop, o, exp, bounds.min_nodes, family.says(bounds))
    stats = {"exploration": label, "sizes": [size_row(s) for s in exp.sizes], "premise met": o.premise_met,
             **family.stats(exp, bounds)}
    rec = None if o.finding is None else family.record(cid, o.finding, params)
    return ClaimResult(cid, verdict, msg, family.bounds_row(bounds, params, cid), stats, rec)


def measure(family: Family, measure_id: str, bounds: Bounds, params: PolicyParams, engine: Engine = SERIAL,
            deadline: float | None = None, progress: Progress | None = None) -> ClaimResult:
    """The largest Φπ − Φ★ per size within the bounds (REACHABLE probes Φπ − Φ★ ≥ j, j = 1..the
    size's nodes), its shortest witness; a lower bound (inconclusive) where a limit was hit."""
    label = f"{family.label(params).split(' ')[0]} measure sif"
    per: dict[str, Any] = {}
    best: tuple[int, Finding[Any, Any]] | None = None
    sizes: list[dict[str, Any]] = []
    complete = True
    cut, wanted = family.cutoff(bounds, params, deadline, progress, label)
    for model in family.models(bounds, params, wanted, deadline):
        top, key = family.gaps(model)
        exp = explore([model], [gap_probe(j, family.tests, measure_id) for j in range(1, top + 1)],
                      Limits(bounds.depth, bounds.max_states), engine, deadline, progress, label)
        sizes += [size_row(s) for s in exp.sizes]
        found = {j: exp.outcomes[probe_name(measure_id, j)].finding for j in range(1, top + 1)}
        gap = max((j for j, f in found.items() if f is not None), default=0)
        done = exp.complete and not any(o.undecided for o in exp.outcomes.values())
        per[key] = gap if done else f"≥ {gap}"
        complete = complete and done
        witness = found.get(gap)
        if witness is not None and (best is None or gap > best[0]):
            best = (gap, witness)
        if not exp.complete:
            break
    r = measured(measure_id, family.axis, {"exploration": label, "sizes": sizes}, per, best, complete,
                 family.bounds_row(bounds, params, None),
                 lambda f, gap: family.record(measure_id, f, params, gap=gap))
    if cut is None:
        return r
    return every_n_measure(r, cut, phi_star_stable(cut) if cut.confirmed else None, bounds.min_nodes)

"""The abstraction ``verify --policy hier-compass`` explores by, checked on each run before it is
trusted (as ``abstraction`` checks a flat scheduler's declarations).

hier-compass is explored on canonical :class:`~heuristics.gpu.hier_abs.HierView` states: every
event runs on a scheduler rebuilt (``with_state``) from the state's representative (domains and the
panels inside a domain renumbered, jobs relabelled: ``hier_model.hier_canonical_map``). That
trusts two properties of the scheduler: its **rebuild** (nothing it keeps outside its HierView
changes a decision) and its **symmetry** (renumbering commutes with every event). Each run first
tests both on states the real scheduler reaches from the empty cluster, breadth-first, each child
a deep copy of its parent object plus one event (never a rebuild):

* rebuild: each event from the sampled object, and from ``with_state`` of the object's own view,
  gives the same outcome, refusal, migration count and successor class;
* symmetry: from the representative, the corresponding event (a departure relabelled, an
  arrival matched by its shape) gives that result too.

Under ``--ties all`` an event comes once per distinct tie outcome, and the option numbers of the
object and of its representative need not correspond, so the check compares, per event, the set
of results over its tie options. A failed check refuses the run (one line naming the state, as
an event path, and the event). A refused symmetry is a finding about the scheduler (its
lowest-index ties are not symmetric: renumbered, it decides otherwise) and the run goes on without
it, on the real states: each a raw view, rebuilt as it is (``--strict``: exit 2). A refused rebuild
ends the run (exit 2): there is no other exploration of hier-compass to fall back to. Passing on
samples is evidence, not proof; the report says on how many states it passed.
"""
from __future__ import annotations

import copy
import sys
from collections import deque
from typing import Any, Hashable, NamedTuple, Sequence

from heuristics.gpu.hier_abs import HierView
from heuristics.gpu.ties import Script
from proofs_check.core.model import Step
from proofs_check.gpu.abstraction import path_text
from proofs_check.gpu.events import Event
from proofs_check.gpu.hier_model import hier_canonical_map
from proofs_check.gpu.policy_checks import PolicyError

SAMPLE_STATES = 25  # sampled states per domain count
SAMPLE_DEPTH = 3  # events from the empty cluster to the deepest sampled state

_Results = dict[Hashable, set[Hashable]]  # event (ids as in the sampled object) -> its results


class HierChecked(NamedTuple):
    """The outcome of the check on one domain count: a refusal line per failed part, or None."""

    rebuild: str | None
    symmetry: str | None
    sampled: int

    def describe(self) -> dict[str, Any]:
        merged = "view" if self.symmetry else "symmetry (canonical view)"
        refused = [why for why in (self.rebuild, self.symmetry) if why]
        return {"declared": ["view", "rebuild", "symmetry"], "merged by": merged, "refused": refused,
                "sampled states": self.sampled}


def check_hier_abstraction(model: Any, limit: int = SAMPLE_STATES, depth: int = SAMPLE_DEPTH) -> HierChecked:
    """Both checks of a ``hier_policy.HierPolicyModel`` on states its real scheduler reaches."""
    root = copy.deepcopy(model.proto)
    queue: deque[tuple[Any, tuple[Event, ...]]] = deque([(root, ())])
    seen = {root.state_key()}
    sampled = 0
    why: dict[str, str] = {}
    while queue and sampled < limit and "rebuild" not in why:
        obj, path = queue.popleft()
        sampled += 1
        view = obj.state_key()
        rep, labels = hier_canonical_map(view)
        live, children = _live_results(model, obj, view)
        for part, name, s, back in (("rebuild", "with_state(its own view)", view, {}),
                                    ("symmetry", "with_state(its canonical form)", rep,
                                     {v: k for k, v in labels.items()})):
            if part in why:
                continue
            got = _results(model, s, model.actions(s), back)
            wrong = next((e for e, want in live.items() if got.get(e) != want), None)
            if wrong is not None:
                why[part] = (f"{part} refused: after {path_text(path)}, {_event(wrong)} on the scheduler itself and on "
                             f"{name} give different results")
        if len(path) + 1 < depth:
            for child, a in children:
                k = child.state_key()
                if k not in seen:
                    seen.add(k)
                    queue.append((child, path + (a,)))
    return HierChecked(why.get("rebuild"), why.get("symmetry"), sampled)


_CHECKED: dict[Hashable, HierChecked] = {}


def trust(model: Any, strict: bool) -> HierChecked:
    """Check ``model`` (once per run and bounds: a run's claims and its measurement share it), print
    each refusal (one line), and switch symmetry off when it was refused. A refused rebuild, or
    any refusal under ``--strict``, is a PolicyError: without the rebuild there is no exploration."""
    # keyed by the run's factory object, not its options: another run (or a changed scheduler with
    # the same options) never reuses a check
    key = (model.factory, model.size, model.demands, model.max_jobs, model.max_w, model.all_ties)
    found = _CHECKED.get(key)
    if found is None:
        found = _CHECKED[key] = check_hier_abstraction(model)
        for line in (found.rebuild, found.symmetry):
            if line:
                print(f"verify: hier-compass on D={model.size}: {line}", file=sys.stderr)
    if found.rebuild or (found.symmetry and strict):
        raise PolicyError(f"hier-compass on D={model.size}: {found.rebuild or found.symmetry}"
                          + (" (--strict)" if strict and not found.rebuild else ""))
    model.symmetric = _SYMMETRIC[(model.factory, model.size)] = found.symmetry is None
    model.checked = found.describe()
    return found


_SYMMETRIC: dict[Hashable, bool] = {}


def symmetric(factory: Any, size: int) -> bool:
    """Whether this run explored the hier-compass of ``factory`` on ``size`` domains by canonical
    states (its records say so, and replay as explored)."""
    return _SYMMETRIC.get((factory, size), True)


def _live_results(model: Any, obj: Any, view: HierView) -> tuple[_Results, list[tuple[Any, Event]]]:
    """Each event's results on deep copies of the real object, and the applied children."""
    out: _Results = {}
    children = []
    for a in model.actions(view):
        child = copy.deepcopy(obj)
        st = model.run_on(child, view, a, Script(a.choices) if a.choices else None)
        out.setdefault(_base(a, {}), set()).add(_result(model, st))
        if st.applied and st.state != view:
            children.append((child, a))
    return out, children


def _results(model: Any, s: HierView, actions: Sequence[Event], back: dict[int, int]) -> _Results:
    """Each event's results from ``s`` as the explorer gets them; ``back`` maps the job labels of
    ``s`` to those of the sampled object."""
    out: _Results = {}
    for a in actions:
        out.setdefault(_base(a, back), set()).add(_result(model, model.step(s, a)))
    return out


def _base(a: Event, back: dict[int, int]) -> Hashable:
    """The event without its tie options, a departure named by the sampled object's job id."""
    return ("+", a.g, a.w) if a.arrive else ("-", back.get(a.job, a.job))


def _result(model: Any, st: Step[Any, Any]) -> Hashable:
    return st.outcome, model._result_key(st) if st.applied else None


def _event(base: Hashable) -> str:
    assert isinstance(base, tuple)
    return f"+(g={base[1]},w={base[2]})" if base[0] == "+" else f"-J{base[1]}"

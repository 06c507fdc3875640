"""Opt-in abstractions of a scheduler's state, each checked on this run before it is trusted.

By default the explorer merges two states only when the two scheduler objects are identical
(``proofs_check.gpu.live``). A scheduler may declare smaller keys, as TLC's VIEW and SYMMETRY and
Stateright's ``.symmetry()`` let a model do:

* a **view**: ``state_key()`` returns everything its future behaviour depends on (e.g. its
  placement). States with equal views are merged;
* a **rebuild**: ``with_state(view)`` builds a scheduler in the state a view describes;
* **symmetry**: ``symmetric = True`` says node numbers and job ids are labels: permuting nodes and
  renaming jobs commutes with every event. States whose views have the same canonical form
  (``proofs_check.gpu.canonical``) are merged. It needs the view and the rebuild.

A declaration is a claim about the code, and such claims can be false (a counter kept outside the
placement, a lowest-index rule). So every run samples reachable states of the real scheduler
(breadth-first, by whole-object identity) and tests each declaration on them before using it:

* view: two sampled states with equal views offer the same events, and every event gives the
  same outcome, the same migration count and equal successor views; then the same from a few of
  the successors (``CHECK_STEPS`` events deep, ``BRANCH`` successors followed);
* rebuild: ``with_state(view)`` of a sampled state behaves like the state itself, likewise;
* symmetry: the scheduler rebuilt on the canonical relabelling of a sampled state and the state
  itself give, under corresponding events, the same outcomes and successors of the same
  canonical form.

A failed check refuses the abstraction with one line naming the two states (as event paths from
the empty cluster) and the event on which they disagree; the run goes on without it (or, under
``--strict``, stops with exit 2). A check passing on samples is evidence, not proof: the report
says which abstractions were trusted, and on which sample. With symmetry the search stores the
canonical key but still expands the real successor, never a representative.
"""
from __future__ import annotations

import random
from collections import deque
from typing import Any, Callable, Hashable, NamedTuple, Sequence

from heuristics.gpu.abs_space import AbsView
from heuristics.gpu.cluster import Job, Placement
from proofs_check.core.model import Outcome, Step, Transition, stepped
from proofs_check.gpu.canonical import canonical, canonical_map

SAMPLE_DEPTH = 3  # events from the empty cluster to the sampled states
SAMPLE_STATES = 80  # sampled states per cluster size
CHECK_STEPS = 2  # events deep each comparison goes
BRANCH = 2  # successors followed past the first event of a comparison


class Trust(NamedTuple):
    """Which abstractions the explorer uses for merging states."""

    view: bool = False
    symmetry: bool = False
    rebuild: bool = False  # states are held as views and expanded through with_state (no pickle)

    def text(self) -> str:
        return "symmetry (canonical view)" if self.symmetry else "view" if self.view else "whole object"


NONE = Trust()


class Declared(NamedTuple):
    """What a scheduler object declares (opt-in, by having the method or attribute)."""

    view: bool
    rebuild: bool
    symmetry: bool

    @staticmethod
    def of(obj: Any) -> "Declared":
        return Declared(callable(getattr(obj, "state_key", None)), callable(getattr(obj, "with_state", None)),
                        getattr(obj, "symmetric", False) is True)

    def names(self) -> list[str]:
        return [n for n, on in zip(("view", "rebuild", "symmetry"), self) if on]


class Checked(NamedTuple):
    """The outcome of checking one scheduler's declarations on one cluster size."""

    declared: Declared
    trust: Trust
    refused: tuple[str, ...]  # one line per refused abstraction
    sampled: int  # states the checks ran on

    def describe(self) -> dict[str, Any]:
        return {"declared": self.declared.names(), "merged by": self.trust.text(), "refused": list(self.refused),
                "sampled states": self.sampled}


def key_of(trust: Trust, view: Any, jobs: tuple[Job, ...]) -> Hashable:
    """The key two states with the view ``view`` (``state_key()``) are merged by under a trusted
    abstraction (the ONE place it is defined; without one the key is the whole object:
    ``(jobs, pickle)``, ``live_model.LiveModel.live``)."""
    if trust.symmetry:
        return canonical(view), tuple(sorted((j.g, j.w) for j in jobs))
    assert trust.view
    return view, jobs


# --------------------------------------------------------------------------- the checks
class _Sample(NamedTuple):
    state: Any  # a Live
    path: tuple[Any, ...]  # the actions from the empty cluster


def path_text(path: Sequence[Any]) -> str:
    """Events from the empty cluster as a refusal line names a state."""
    return "[" + " ".join(str(a) for a in path) + "]" if path else "[the empty cluster]"


def sample(model: Any, depth: int = SAMPLE_DEPTH, limit: int = SAMPLE_STATES, walk_depth: int = 0,
           seed: int = 0) -> list[_Sample]:
    """Reachable states of ``model`` (merged by whole-object identity): a third breadth-first
    from the empty cluster, the rest at the ends of seeded random walks of up to ``walk_depth``
    events (the search's depth: disagreements may need deep states)."""
    root = model.init_states()[0]
    seen = {root}
    out = [_Sample(root, ())]
    out += _breadth_first(model, out[0], seen, depth, max(1, limit // 3))
    rng = random.Random(seed)
    tries = 0
    while len(out) < limit and walk_depth > 0 and tries < 4 * limit:
        tries += 1
        cur = out[0]
        for _ in range(rng.randint(1, walk_depth)):
            acts = list(model.actions(cur.state))
            if not acts:
                break
            st = model.step(cur.state, rng.choice(acts))
            if st.applied:
                cur = _Sample(st.state, cur.path + (st.action,))
        if cur.state not in seen:
            seen.add(cur.state)
            out.append(cur)
    return out


def _breadth_first(model: Any, root: _Sample, seen: set[Any], depth: int, limit: int) -> list[_Sample]:
    out: list[_Sample] = []
    queue = deque([root])
    while queue and len(out) < limit:
        cur = queue.popleft()
        if len(cur.path) >= depth:
            continue
        for a in model.actions(cur.state):
            st = model.step(cur.state, a)
            if not st.applied or st.state in seen:
                continue
            seen.add(st.state)
            nxt = _Sample(st.state, cur.path + (st.action,))
            out.append(nxt)
            queue.append(nxt)
            if len(out) >= limit:
                break
    return out


def _view(live: Any) -> Any:
    return live.view()


def _signature(st: Step[Any, Any], view: Callable[[Any], Any]) -> tuple[Any, ...]:
    d = st.detail
    if not st.applied:
        return (st.outcome.value,)
    return (st.outcome.value, "refused" if d.refused else "applied", len(d.migrations), view(st.state))


def _agree(model: Any, a: Any, b: Any, steps: int, view: Callable[[Any], Any],
           path: tuple[Any, ...] = ()) -> str | None:
    """None when ``a`` and ``b`` behave alike for ``steps`` events, else where they differ."""
    if a == b:  # the same whole object (equal pickles): the premise the search merges states on
        return None
    acts_a, acts_b = list(model.actions(a)), list(model.actions(b))
    if acts_a != acts_b:
        return f"after {path_text(path)}: they offer different events" if path else "in the events they offer"
    deeper: list[tuple[Any, Any, tuple[Any, ...]]] = []
    for act in acts_a:
        x, y = model.step(a, act), model.step(b, act)
        sx, sy = _signature(x, view), _signature(y, view)
        here = path + (act,)
        if sx != sy:
            return f"after {path_text(here)}: {_difference(sx, sy)}"
        if steps > 1 and x.applied:
            deeper.append((x.state, y.state, here))
    # Every event one step deep; deeper, a few successors spread over the event list (the cost
    # stays linear in the sample; the sample's random walks already reach deep states).
    for x, y, here in deeper[::max(1, len(deeper) // BRANCH)][:BRANCH]:
        why = _agree(model, x, y, steps - 1, view, here)
        if why:
            return why
    return None


def _difference(sx: tuple[Any, ...], sy: tuple[Any, ...]) -> str:
    if sx[:3] == sy[:3]:
        return f"{_shown(sx)} in both, but to different states ({sx[3]!s:.200} vs {sy[3]!s:.200})"
    return f"{_shown(sx)} vs {_shown(sy)}"


def _shown(sig: tuple[Any, ...]) -> str:
    if len(sig) == 1:
        return sig[0]
    return f"{sig[1]} with {sig[2]} migration(s)"


def check_view(model: Any, samples: list[_Sample], steps: int = CHECK_STEPS) -> str | None:
    """The refusal line of the declared view, or None when it passes on ``samples``."""
    groups: dict[Any, _Sample] = {}
    for s in samples:
        v = _view(s.state)
        first = groups.setdefault(v, s)
        if first is s:
            continue
        why = _agree(model, first.state, s.state, steps, _view)
        if why:
            return (f"view refused: the states after {path_text(first.path)} and after {path_text(s.path)} have "
                    f"equal views (state_key()) but differ {why}")
    return None


def _rebuilt(model: Any, s: _Sample, view: Any, jobs: tuple[Job, ...]) -> Any:
    """The state rebuilt from ``view`` exactly as a trusted rebuild makes it (``LiveModel.rebuilt``)."""
    return model.live(model.rebuilt(view), jobs)


def check_rebuild(model: Any, samples: list[_Sample], steps: int = CHECK_STEPS) -> str | None:
    """The refusal line of the declared rebuild (``with_state``), or None."""
    for s in samples:
        try:
            r = _rebuilt(model, s, _view(s.state), s.state.jobs)
        except Exception as e:
            return f"rebuild refused: with_state(state_key()) after {path_text(s.path)} raised {type(e).__name__}: {e}"
        why = _agree(model, s.state, r, steps, lambda x: (_view(x), x.placement))
        if why:
            return f"rebuild refused: with_state(state_key()) after {path_text(s.path)} and the scheduler itself " \
                   f"differ {why}"
    return None


def _relabelled(a: Any, labels: dict[int, int]) -> Any:
    return a._replace(job=labels[a.job]) if hasattr(a, "job") and not a.arrive else a


def _matching(acts: Sequence[Any], a: Any, labels: dict[int, int]) -> Any:
    """The action among ``acts`` (the relabelled state's) that corresponds to ``a`` of the original."""
    if hasattr(a, "job") and a.arrive:  # an arrival's id is the smallest free one in either state
        return next(b for b in acts if getattr(b, "arrive", False) and (b.g, b.w) == (a.g, a.w))
    return _relabelled(a, labels)


def check_symmetry(model: Any, samples: list[_Sample]) -> str | None:
    """The refusal line of declared node and job-label symmetry, or None."""
    for s in samples:
        view = _view(s.state)
        if not isinstance(view, (AbsView, Placement)):
            return f"symmetry refused: state_key() is a {type(view).__name__}, symmetry needs a Placement or an AbsView"
        rep, _, labels = canonical_map(view)
        jobs = tuple(sorted(Job(labels.get(j.id, j.id), j.g, j.w) for j in s.state.jobs))
        try:
            r = _rebuilt(model, s, rep, jobs)
        except Exception as e:
            return f"symmetry refused: with_state(canonical view) after {path_text(s.path)} raised " \
                   f"{type(e).__name__}: {e}"
        if r == s.state and all(k == v for k, v in labels.items()):
            continue  # the state is its own representative: every step commutes with the identity
        theirs = model.actions(r)
        for a in model.actions(s.state):
            x, y = model.step(s.state, a), model.step(r, _matching(theirs, a, labels))
            sx = _signature(x, lambda t: canonical(_view(t)))
            sy = _signature(y, lambda t: canonical(_view(t)))
            if sx != sy:
                return (f"symmetry refused: after {path_text(s.path + (a,))}, the same state with its nodes and jobs "
                        f"renumbered (canonical form) gives another result: {_difference(sx, sy)}")
    return None


def checked(model: Any, walk_depth: int, limit: int = SAMPLE_STATES, seed: int = 0) -> Checked:
    """Check every abstraction the scheduler of ``model`` (a ``LiveModel`` merging whole objects)
    declares, on states sampled up to ``walk_depth`` events deep; the trust is what passed."""
    if model.trust != NONE:  # the checks take equal states for equal whole objects (``_agree``)
        raise ValueError(f"checked needs a model merging whole objects, got trust {model.trust}")
    obj = model.init_states()[0].obj()
    dec = Declared.of(obj)
    if not dec.view:
        return Checked(dec, NONE, (), 0)
    model = _Remembered(model.keeping_views())
    samples = sample(model, SAMPLE_DEPTH, limit, walk_depth, seed)
    refused = []
    view_why = check_view(model, samples)
    if view_why:
        refused.append(view_why)
    rebuild_why = check_rebuild(model, samples) if dec.rebuild else None
    if rebuild_why:
        refused.append(rebuild_why)
    sym_ok = False
    if dec.symmetry:
        if not dec.rebuild or rebuild_why or view_why:
            refused.append("symmetry refused: it needs a view and a rebuild that pass their checks")
        else:
            sym_why = check_symmetry(model, samples)
            if sym_why:
                refused.append(sym_why)
            sym_ok = sym_why is None
    rebuild_ok = view_why is None and dec.rebuild and rebuild_why is None
    return Checked(dec, Trust(view=view_why is None, symmetry=sym_ok, rebuild=rebuild_ok), tuple(refused),
                   len(samples))


class _Remembered:
    """``model`` with its steps remembered for one :func:`checked`: the sampling and the three
    checks step the same sampled states by the same events (states are whole objects, compared
    by their pickles, so a hit is the same scheduler state)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self._steps: dict[tuple[Any, Any], Any] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def step(self, s: Any, a: Any) -> Any:
        key = (s, a)
        st = self._steps.get(key)
        if st is None:
            st = self._steps[key] = self.model.step(s, a)
        return st


# --------------------------------------------------------------------------- COMPASS's fast path
FAST_PATH_STATES = 25  # sampled canonical states per cluster size


class _Fresh:
    """A ``PolicyModel`` stepped by fresh rebuilds only (the states the check samples; its
    transitions as ``stepped`` defines them)."""

    def __init__(self, model: Any) -> None:
        self.actions, self.step = model.actions, model.fresh_step
        self.within, self.representative = model.within, model.representative


def check_fast_path(model: Any, limit: int = FAST_PATH_STATES) -> str | None:
    """The refusal line of a ``PolicyModel``'s apply-and-undo (one scheduler per state, every
    event undone on it: COMPASS's ``trial`` / ``view_after`` / ``rollback``), or None when, on
    sampled reachable states, every event's transition (``PolicyModel.transition``, what the
    search takes: outcome, representative successor or pruned, migration count) is the one a
    scheduler freshly rebuilt from the state (``with_state``) gives."""
    fresh_model = _Fresh(model)
    samples = _breadth_first(fresh_model, _Sample(model.init_states()[0], ()), set(), SAMPLE_DEPTH, limit)
    for s in samples:
        for a in model.actions(s.state):
            want = _seen_as(stepped(fresh_model, s.state, a))
            try:
                got = _seen_as(model.transition(s.state, a))
            except Exception as e:
                return f"apply-and-undo refused: after {path_text(s.path + (a,))} it raised {type(e).__name__}: {e}"
            if got != want:
                return (f"apply-and-undo refused: after {path_text(s.path + (a,))} it gives {_outcome_text(got[0])} "
                        f"with {got[2]} migration(s), a fresh rebuild {_outcome_text(want[0])} with {want[2]} "
                        f"(or another state)")
    return None


def _seen_as(t: Transition) -> tuple[Outcome | None, Any, int]:
    """What the search keeps of a transition: outcome, state, number of migrations."""
    return t[0], t[1], len(t[2] or ())


def _outcome_text(outcome: Outcome | None) -> str:
    return "pruned (outside the premise)" if outcome is None else outcome.value

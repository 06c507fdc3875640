"""The states a model reaches, by a plain breadth-first walk (independent of the core's search)."""
from __future__ import annotations

from typing import Any, Callable

from proofs_check.core.model import Outcome, Step


def applied(st: Step[Any, Any]) -> bool:
    return st.outcome is Outcome.APPLIED


def reachable(model: Any, depth: int, keep: Callable[[Step[Any, Any]], bool] = applied) -> set[Any]:
    """The representatives ``model`` reaches within ``depth`` actions through steps ``keep`` accepts."""
    front = [model.representative(s) for s in model.init_states()]
    seen = set(front)
    for _ in range(depth):
        nxt = []
        for s in front:
            for a in model.actions(s):
                st = model.step(s, a)
                if keep(st):
                    rep = model.representative(st.state)
                    if rep not in seen:
                        seen.add(rep)
                        nxt.append(rep)
        front = nxt
    return seen

"""Property-based sampling of a state model beyond the exhaustive range (Hypothesis).

Hypothesis draws a size from ``sizes`` and a list of action choices; choice c picks action
``c mod len(actions)`` of the current representative, so every drawn sequence is a legal trace of
the model and replays exactly with ``verify --replay``. Refused actions are skipped; successors
outside the premise filter (``model.within``) are skipped too. ``hypothesis.target`` pushes toward
the property's ``score`` (e.g. Φπ − Φ★). A failure is shrunk by Hypothesis (seeded, no database):
shrinking moves choices toward 0, i.e. toward the first actions of each state.

With ``ties`` (``--random K --ties all``) every tie point of the scheduler is answered by a
drawn option too (:class:`TieDrawing`: the model's ``step_drawing``), and the step's action
records the options taken, so the trace replays them; shrinking moves them toward option 0, the
default tie-breaking.

Sampling never proves anything about the unsampled space: it can only add a counterexample
(violated) or a reachability witness.

A run's ``deadline`` (``--time-limit``) and SIGINT/SIGTERM (``proofs_check.core.interrupt``) end
the sampling: :func:`sample` then returns what it found so far and the number of sequences run
(fewer than asked; :data:`last_stop` says why). A sequence still running at the deadline is
abandoned there, even inside one long step (a large cluster's canonical form can take seconds):
a timer thread sends the main thread SIGUSR1, whose handler ends the sampling (:func:`_deadline`).
"""
from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, ContextManager, Iterator, Protocol, Sequence, runtime_checkable

from proofs_check.core.model import A, Outcome, Property, S, StateModel, Step, failure_numbers
from proofs_check.core.replay import fires
from proofs_check.core import interrupt
from proofs_check.core.search import Finding

MAX_ACTIONS = 30
TIME_LIMIT = "time limit"
OUT_OF_MEMORY = "out of memory"  # a sequence that could not be held in memory ends the sampling
last_stop = {"reason": ""}  # why the last sample() ended early: TIME_LIMIT, "interrupted", OUT_OF_MEMORY or ""


@runtime_checkable
class TieDrawing(Protocol[S, A]):
    """A state model whose scheduler's tie points can be answered by a draw."""

    def step_drawing(self, s: S, a: A, draw: Callable[[int], int]) -> Step[S, A]:
        """``a`` from ``s`` with every tie point of k options answered by ``draw(k)`` (0 ≤ · < k);
        the step's action records the options taken."""
        ...


class _Found(AssertionError):
    pass


class _Stopped(BaseException):
    """The deadline passed or a signal came: Hypothesis lets a BaseException through at once."""


def sample(model_of: Callable[[int], StateModel[S, A]], sizes: Sequence[int], prop: Property[S, A], runs: int,
           seed_value: int, max_actions: int = MAX_ACTIONS, ties: bool = False,
           deadline: float | None = None) -> tuple[Finding[S, A] | None, int]:
    """Run ``runs`` sampled sequences; returns (the shrunk finding or None, sequences run).
    ``ties``: a drawn option at every tie point (the models must be :class:`TieDrawing`).
    ``deadline`` (a ``time.perf_counter()`` value) and a signal stop it early (see the module)."""
    # Imported here: Hypothesis takes a seventh of `verify`'s start-up, and only --sample runs it.
    from hypothesis import HealthCheck, Phase, given, seed, settings, target
    from hypothesis import strategies as st

    count = [0]
    found: list[Finding[S, A]] = []
    last_stop["reason"] = ""

    def body(size: int, choices: list[int], data: Any) -> None:
        # a signal already received is raised on entering the sequence (``abandonable``)
        if deadline is not None and time.perf_counter() >= deadline:
            last_stop["reason"] = TIME_LIMIT
            raise _Stopped()
        count[0] += 1
        model = model_of(size)
        step_of = _stepper(model, data)
        state = model.representative(model.init_states()[0])
        actions: list[A] = []
        states: list[S] = []
        best = 0.0
        for c in choices:
            if interrupt.requested():  # a long sequence (large N) is not finished after a signal
                last_stop["reason"] = interrupt.INTERRUPTED
                raise _Stopped()
            allowed = model.actions(state)
            if not allowed:
                break
            step = step_of(state, allowed[c % len(allowed)])
            a = step.action
            assert a is not None
            if step.outcome is Outcome.FAILED and prop.failure_breaks:
                found[:] = [Finding(size, actions + [a], states + [state], failure_numbers(step.reason), step.reason)]
                raise _Found(step.reason)
            if not step.applied:
                continue
            step = Step(state, a, step.outcome, model.representative(step.state), step.detail, step.reason)
            if not model.within(step):
                continue
            state = step.state
            actions.append(a)
            states.append(state)
            if prop.score is not None and prop.applies(step, True):
                best = max(best, prop.score(step))
            numbers = fires(prop, step)
            if numbers is not None:
                found[:] = [Finding(size, list(actions), list(states), numbers)]
                raise _Found(str(numbers))
        target(best, label=prop.name)

    def within_memory(size: int, choices: list[int], data: Any) -> None:
        """``body``, abandonable by a signal or the deadline; out of memory, the sampling stops as
        at its deadline (not a Hypothesis failure to shrink: that would need memory again)."""
        try:
            with abandonable():
                body(size, choices, data)
        except MemoryError:
            last_stop["reason"] = OUT_OF_MEMORY
            raise _Stopped() from None

    sequences = {"size": st.sampled_from(list(sizes)),
                 "choices": st.lists(st.integers(0, 1 << 16), max_size=max_actions)}
    if ties:  # a separate test so that without ties the draws stay exactly those of before
        test = given(**sequences, data=st.data())(within_memory)
    else:
        test = given(**sequences)(lambda size, choices: within_memory(size, choices, None))
    run = seed(seed_value)(settings(max_examples=runs, database=None, deadline=None, derandomize=False,
                                    print_blob=False, suppress_health_check=list(HealthCheck),
                                    phases=[Phase.generate, Phase.target, Phase.shrink],
                                    report_multiple_bugs=False)(test))
    try:
        with _deadline(deadline) as abandonable:
            run()
    except _Found:
        pass
    except _Stopped:  # a failure found before the stop is kept (Hypothesis was shrinking it)
        pass
    except interrupt.Interrupted:
        last_stop["reason"] = interrupt.INTERRUPTED
    return (found[0] if found else None), count[0]


@contextmanager
def _deadline(deadline: float | None) -> Iterator[Callable[[], ContextManager[None]]]:
    """In the block, the ``deadline`` (``time.perf_counter()``) ends the sampling: a timer thread
    sends this thread SIGUSR1 (the main thread only; elsewhere the deadline is checked before each
    sequence). Yields ``abandonable``: the region (one sequence) that the deadline's SIGUSR1, and
    SIGINT/SIGTERM (``interrupt.armed``), abandon at once, even inside one long step. Outside it
    (Hypothesis's own code between sequences) a signal only leaves its flag, checked at the next
    sequence: an exception raised there, before Hypothesis has made its runner, reaches the caller
    as Hypothesis's internal AssertionError instead. Once the block ends the handler is inert
    before it is removed, so a signal already on its way is absorbed, not fatal."""
    inside = [False]

    @contextmanager
    def abandonable() -> Iterator[None]:
        with interrupt.armed():
            inside[0] = True
            try:
                yield
            finally:
                inside[0] = False

    if deadline is None or threading.current_thread() is not threading.main_thread():
        yield abandonable
        return

    def handler(signum: int, frame: Any) -> None:
        if inside[0]:
            last_stop["reason"] = TIME_LIMIT
            raise _Stopped()

    old = signal.signal(signal.SIGUSR1, handler)
    main = threading.main_thread().ident
    assert main is not None
    timer = threading.Timer(max(deadline - time.perf_counter(), 0.0), signal.pthread_kill, (main, signal.SIGUSR1))
    timer.daemon = True
    timer.start()
    try:
        yield abandonable
    finally:
        inside[0] = False
        timer.cancel()
        timer.join()
        time.sleep(0)  # a SIGUSR1 the timer already sent is handled now, by the inert handler
        signal.signal(signal.SIGUSR1, old)


def _stepper(model: StateModel[S, A], data: Any) -> Callable[[S, A], Step[S, A]]:
    """``model.step``, or with a Hypothesis ``data`` source a step drawing every tie option."""
    if data is None:
        return model.step
    if not isinstance(model, TieDrawing):
        raise TypeError(f"{type(model).__name__} cannot draw tie choices (no step_drawing)")
    drawing: TieDrawing[S, A] = model

    from hypothesis import strategies as st

    def draw(k: int) -> int:
        return int(data.draw(st.integers(0, k - 1)))

    return lambda s, a: drawing.step_drawing(s, a, draw)

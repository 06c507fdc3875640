"""Issue 27, item 5: out of memory in a level stops that exploration (inconclusive, "out of
memory") with the report of what was explored, instead of a MemoryError traceback."""
from test_core import BAD, BIG, Counters, models, never, verdict

from proofs_check.core.model import Expect, Property
from proofs_check.core.search import OUT_OF_MEMORY, explore
from proofs_check.core.verdict import Verdict


class Hungry(Counters):
    """Counters whose states with a + b >= 3 cannot be built (MemoryError)."""

    def step(self, s, a):
        st = super().step(s, a)
        if sum(st.state) >= 3:
            raise MemoryError()
        return st


def test_a_level_out_of_memory_is_an_inconclusive_stop_with_what_was_explored():
    exp = explore([Hungry(3)], [Property("p", Expect.ALWAYS, never)], BIG)
    (s,) = exp.sizes
    assert not s.complete and s.stop_reason == OUT_OF_MEMORY and s.distinct >= 3
    v, msg = verdict(exp, Property("p", Expect.ALWAYS, never))
    assert v is Verdict.INCONCLUSIVE and OUT_OF_MEMORY in msg
    full = explore(models(3), [Property("p", Expect.ALWAYS, never), BAD], BIG)
    assert full.sizes[0].complete  # the same model with memory enough finishes

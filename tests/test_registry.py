"""The GPU policy registry: every name builds, unknown names and options are clear errors."""
import pytest

from heuristics.gpu.cluster import Job
from heuristics.gpu.policy import Outcome
from heuristics.gpu.registry import make_policy, policy_names, policy_options

# Options a policy cannot be built without (the others build on defaults).
REQUIRED = {"hier-compass": {"panels_per_domain": 2}}


@pytest.mark.parametrize("name", policy_names())
def test_every_name_builds_a_working_policy(name):
    p = make_policy(name, 4, **REQUIRED.get(name, {}))
    assert (p.n_nodes, p.capacity) == (4, 8)
    assert p.arrive(Job(1, 2, 1)).outcome is Outcome.APPLIED
    assert p.with_state(p.state_key()).running() == p.running() == {1: Job(1, 2, 1)}


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown policy 'nope'; known: best-fit, cafgd, compass-bare-detach, compass-literal"):
        make_policy("nope", 2)


def test_unknown_option_is_an_error_not_ignored():
    with pytest.raises(ValueError, match=r"'compass-literal' takes no option 'round_length'; its options: none"):
        make_policy("compass-literal", 2, round_length=30.0)
    with pytest.raises(ValueError, match=r"'fft' takes no option 'variant'; its options: round_length"):
        make_policy("fft", 2, variant="repaired")


def test_a_variant_comes_from_the_name_only():
    assert policy_options("compass-literal") == []
    assert make_policy("compass-repaired", 2).name == "compass-repaired"


def test_a_foreign_state_key_is_a_type_error():
    compass, first_fit = make_policy("compass-literal", 2), make_policy("first-fit", 2)
    with pytest.raises(TypeError, match="AbsView"):
        compass.with_state(first_fit.state_key())
    with pytest.raises(TypeError, match="Placement"):
        first_fit.with_state(compass.state_key())

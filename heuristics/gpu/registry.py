"""Every GPU placement policy by name: the one table the simulator, ``simulate`` and the verifier use.

The table is written out here, not filled by decorators in the policy modules: this module imports
the policy modules and none of them imports it, so importing any policy never runs (or depends on)
the registration of the others, and the import graph stays acyclic.

A factory takes ``(n_nodes, capacity, **options)``; the options a policy accepts are its
factory's remaining keyword parameters (e.g. ``round_length`` for ``fft``/``drr``,
``panels_per_domain`` for ``hier-compass``). An option a policy does not take is an error, never
silently ignored.
"""
from __future__ import annotations

import inspect
from functools import partial
from typing import Callable, Mapping

from heuristics.gpu.baselines import RULES, NodeRulePolicy
from heuristics.gpu.cluster import G_DEFAULT
from heuristics.gpu.compass import VARIANTS, Compass
from heuristics.gpu.hier_compass import build_hier_compass
from heuristics.gpu.policy import Policy
from heuristics.gpu.repack_baselines import DRR, FFT
from heuristics.gpu.sifopt import SIFOpt

PolicyFactory = Callable[..., Policy]


def _compass(variant: str) -> PolicyFactory:
    """COMPASS of one named variant; the variant is the name's, not an option (so
    ``compass-literal`` can never be built as another variant)."""

    def build(n_nodes: int, capacity: int = G_DEFAULT) -> Compass:
        return Compass(n_nodes, capacity, variant)

    return build


_FACTORIES: Mapping[str, PolicyFactory] = {
    **{rule: partial(NodeRulePolicy, rule) for rule in RULES},
    **{f"compass-{v}": _compass(v) for v in VARIANTS},
    "hier-compass": build_hier_compass,
    "sifopt": SIFOpt,
    "fft": FFT,
    "drr": DRR,
}


def policy_names() -> list[str]:
    """The names ``make_policy`` accepts, sorted."""
    return sorted(_FACTORIES)


def policy_options(name: str) -> list[str]:
    """The options (keyword arguments beyond ``n_nodes`` and ``capacity``) policy ``name`` takes."""
    params = list(inspect.signature(_factory(name)).parameters.values())[2:]
    return [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def make_policy(name: str, n_nodes: int, capacity: int = G_DEFAULT, **opts: object) -> Policy:
    """The policy named ``name`` on an empty cluster of ``n_nodes`` nodes of ``capacity`` GPUs.

    Raises ``ValueError`` for an unknown name (listing the known ones), for an option the policy
    does not take (listing the ones it does) and for an option value the policy rejects.
    """
    factory = _factory(name)
    unknown = sorted(set(opts) - set(policy_options(name)))
    if unknown:
        takes = ", ".join(policy_options(name)) or "none"
        raise ValueError(f"policy {name!r} takes no option {', '.join(map(repr, unknown))}; its options: {takes}")
    return factory(n_nodes, capacity, **opts)


def _factory(name: str) -> PolicyFactory:
    try:
        return _FACTORIES[name]
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; known: {', '.join(policy_names())}") from None

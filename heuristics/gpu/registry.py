"""Every GPU placement policy by name: the one table the simulator, ``simulate`` and the verifier use.

The table is written out here, not filled by decorators in the policy modules: this module imports
the policy modules and none of them imports it, so importing any policy never runs (or depends on)
the registration of the others, and the import graph stays acyclic.

A factory takes ``(n_nodes, capacity, **options)``; the options a policy accepts are its
factory's remaining keyword parameters (e.g. ``round_length`` for ``fft``/``drr``,
``panels_per_domain`` for ``hier-compass``). An option a policy does not take is an error, never
silently ignored.

Third-party schedulers register through the entry-point group ``placement_oracles.policies``
(``importlib.metadata``): in the package's ``pyproject.toml``::

    [project.entry-points."placement_oracles.policies"]
    my-scheduler = "my_package.scheduler:MyScheduler"

Each entry point names a factory ``(n_nodes, capacity=8, **options) -> Policy``. Entry points are
merged into the table when a name is first looked up; a built-in name always wins (an entry point
that reuses one is ignored, and listed by :func:`shadowed_entry_points`). A factory that does not
load is an error naming the entry point, raised when that name is used, never at import.
A scheduler that is not registered at all is named by ``package.module:factory``
(:func:`load_factory`).
"""
from __future__ import annotations

import importlib
import inspect
import os
import sys
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any, Callable, Mapping

from heuristics.gpu.baselines import RULES, NodeRulePolicy
from heuristics.gpu.cafgd import CAFGD
from heuristics.gpu.cluster import G_DEFAULT
from heuristics.gpu.compass import VARIANTS, Compass
from heuristics.gpu.hier_cluster import G_PANEL
from heuristics.gpu.hier_compass import PANEL, HierCompass
from heuristics.gpu.mcg import MCG
from heuristics.gpu.policy import Policy

if TYPE_CHECKING:  # importlib.metadata is imported where entry points are read: 20 ms of every start-up
    from importlib.metadata import EntryPoint

PolicyFactory = Callable[..., Policy]


def _compass(variant: str) -> PolicyFactory:
    """COMPASS of one named variant; the variant is the name's, not an option (so
    ``compass-literal`` can never be built as another variant)."""

    def build(n_nodes: int, capacity: int = G_DEFAULT) -> Compass:
        return Compass(n_nodes, capacity, variant)

    return build


def build_hier_compass(n_nodes: int, capacity: int = G_DEFAULT, panels_per_domain: int | None = None,
                       variant: str = "literal", eight_gpu_level: str = PANEL) -> HierCompass:
    """Hierarchical COMPASS on ``n_nodes`` panels of 8 GPUs grouped into domains of
    ``panels_per_domain``: the node-count signature every policy shares. Here, not in the
    compiled ``hier_compass`` module, because ``policy_options`` reads the options from its
    signature, which a compiled function does not expose."""
    if panels_per_domain is None:
        raise ValueError("hier-compass needs the option panels_per_domain (K panels per NVLink domain)")
    if capacity != G_PANEL:
        raise ValueError(f"hier-compass runs on panels of 8 GPUs, got capacity={capacity}")
    if n_nodes % panels_per_domain:
        raise ValueError(f"n_nodes={n_nodes} panels is not a multiple of panels_per_domain={panels_per_domain}")
    return HierCompass(n_nodes // panels_per_domain, panels_per_domain, variant, eight_gpu_level)


# A factory, or the "module:attribute" of one imported when the policy is first made: SIFOpt's and
# the repacking baselines' modules import the repacking oracles (about 10 ms of every start-up of
# a program that never makes one).
_FACTORIES: Mapping[str, PolicyFactory | str] = {
    **{rule: partial(NodeRulePolicy, rule) for rule in RULES},
    **{f"compass-{v}": _compass(v) for v in VARIANTS},
    "hier-compass": build_hier_compass,
    "sifopt": "heuristics.gpu.sifopt:SIFOpt",
    "fft": "heuristics.gpu.repack_baselines:FFT",
    "drr": "heuristics.gpu.repack_baselines:DRR",
    "cafgd": CAFGD,
    "mcg": MCG,
}


ENTRY_POINT_GROUP = "placement_oracles.policies"
# The built-in policies that migrate running instances (their admission is judged against a full
# repacking of the cluster, not only the free GPUs: proofs_check.gpu.policy_claims).
MIGRATING: frozenset[str] = frozenset({*(f"compass-{v}" for v in VARIANTS), "hier-compass", "sifopt"})
# What a scheduler must have (heuristics.gpu.policy.Policy), in the protocol's order; everything
# else (name, migrates, ties, clone, state_key, with_state, symmetric, next_round) is optional.
PROTOCOL_METHODS = ("arrive", "depart", "placement")
PROTOCOL_ATTRIBUTES = ("n_nodes", "capacity")


@lru_cache(maxsize=1)
def _entry_points() -> dict[str, EntryPoint]:
    """The third-party registrations not shadowed by a built-in name (read once per process)."""
    from importlib.metadata import entry_points
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name not in _FACTORIES}


def shadowed_entry_points() -> list[str]:
    """Entry points ignored because a built-in policy has their name ("name = module:attr")."""
    from importlib.metadata import entry_points
    return sorted(f"{ep.name} = {ep.value}" for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name in _FACTORIES)


def refresh_entry_points() -> None:
    """Forget the entry points read so far (after installing a package into this process)."""
    _entry_points.cache_clear()


def policy_names() -> list[str]:
    """The names ``make_policy`` accepts, sorted: the built-ins and every registered entry point."""
    return sorted({*_FACTORIES, *_entry_points()})


def builtin_policy_names() -> list[str]:
    """The built-in names only, sorted."""
    return sorted(_FACTORIES)


def policy_migrates(name: str, policy: object | None = None) -> bool:
    """Whether the policy may migrate running instances: the built-in table, or, for any other
    scheduler, its ``migrates`` attribute (default False)."""
    if name in _FACTORIES:
        return name in MIGRATING
    return bool(getattr(policy, "migrates", False))


def protocol_gaps(obj: object) -> list[str]:
    """What ``obj`` lacks of the Policy protocol: missing or non-callable methods, missing
    attributes (empty when it implements it)."""
    missing = [f"{m}()" for m in PROTOCOL_METHODS if not callable(getattr(obj, m, None))]
    return missing + [a for a in PROTOCOL_ATTRIBUTES if not hasattr(obj, a)]


def load_factory(spec: str) -> PolicyFactory:
    """The factory named ``package.module:attr`` (a class or a function ``(n_nodes, capacity)``);
    ValueError naming what could not be found."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"{spec!r} is neither a registered policy nor 'package.module:factory'")
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, "")  # as ``python -m`` does: a module in the current directory is found
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError(f"{spec!r}: cannot import module {module_name!r} ({e})") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"{spec!r}: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"{spec!r}: {attr!r} is not callable (a factory (n_nodes, capacity) -> Policy)")
    return obj  # type: ignore[no-any-return]


def policy_options(name: str) -> list[str]:
    """The options (keyword arguments beyond ``n_nodes`` and ``capacity``) policy ``name`` takes."""
    params = list(inspect.signature(_factory(name)).parameters.values())[2:]
    return [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def make_policy(name: str, n_nodes: int, capacity: int = G_DEFAULT, **opts: object) -> Policy:
    """The policy named ``name`` (registered, or ``package.module:factory``) on an empty cluster of
    ``n_nodes`` nodes of ``capacity`` GPUs.

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
    built_in = _FACTORIES.get(name)
    if isinstance(built_in, str):
        module, attr = built_in.split(":")
        return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]
    if built_in is not None:
        return built_in
    ep = _entry_points().get(name)
    if ep is None and ":" in name:  # an unregistered scheduler by ``package.module:factory``
        return load_factory(name)
    if ep is None:
        raise ValueError(f"unknown policy {name!r}; known: {', '.join(policy_names())} "
                         f"(or package.module:factory)")
    try:
        factory = ep.load()
    except Exception as e:  # a third party's import error, reported by its entry point
        raise ValueError(f"policy {name!r} (entry point {ep.value!r} of {ENTRY_POINT_GROUP}) does not load: "
                         f"{type(e).__name__}: {e}") from None
    if not callable(factory):
        raise ValueError(f"policy {name!r}: entry point {ep.value!r} is not callable")
    return factory  # type: ignore[no-any-return]

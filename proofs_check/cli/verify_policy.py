"""`verify --policy`: the flags and selection of the policy.* claims for any scheduler.

    verify --list-policies                              # every registered name, one per line
    verify --policy best-fit                            # every policy.* claim, N ≤ 3, depth 6
    verify --policy my_pkg.sched:MyScheduler --claim policy.valid --junit out.xml
    verify --policy compass-literal --claim policy.sif --bound 1
    verify --policy fgd --measure sif --max-nodes 3     # the largest Φπ − Φ★ with its witness

With ``--policy`` the default bounds are smaller than the COMPASS claims' (every job demand
g = 1..8 may arrive, and a general scheduler has no ABS structure to keep the state space small):
N = 1..3, depth 6, ≤ 3 concurrent jobs, w ≤ 3; any of ``--max-nodes`` / ``--depth`` /
``--max-jobs`` / ``--max-w`` given on the command line wins. ``--bound k`` is the policy.sif bound
Φπ − Φ★ ≤ k (an integer; default 2, i.e. SIF ≤ 2/N). ``--ties all`` explores every legal choice
at the scheduler's tie points; a scheduler without a ``ties`` attribute is a usage error (exit 2).
"""
from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from heuristics.gpu.registry import policy_names
from proofs_check.catalogue import resolve
from proofs_check.cli.common import UsageError, usage_on
from proofs_check.gpu import hier_policy
from proofs_check.gpu.flat_claims import ALL_G, Bounds, every_n_bounds
from proofs_check.gpu.policy_checks import require_ties
from proofs_check.gpu.policy_claims import CLAIM_IDS, MEASURE_SIF, PolicyError, PolicyParams, PolicyTarget, owns

POLICY_BOUNDS: dict[str, Any] = {"max_nodes": 3, "depth": 6, "max_jobs": 3, "max_w": 3}
MEASURES = ("sif",)


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("any scheduler: the policy.* claims (docs/policies.md)")
    g.add_argument("--policy", metavar="NAME|MODULE:FACTORY",
                   help="check this scheduler: a registered name (--list-policies) or package.module:factory "
                        "(factory(n_nodes, capacity) -> Policy); selects every policy.* claim unless --claim/--measure (default: none)")
    g.add_argument("--list-policies", action="store_true", help="print every registered scheduler name and exit")
    g.add_argument("--event-time-limit", type=float, default=None, metavar="SECONDS",
                   help="policy.*: one scheduler event (arrive, depart, next_round) running longer than this is an "
                        "operator failure (a policy.no-stuck counterexample); default: no limit, but --time-limit "
                        "always stops an event that never returns")
    g.add_argument("--strict", action="store_true",
                   help="a declared abstraction (view, rebuild, symmetry) that fails its check on this run stops the "
                        "run with exit 2 (default: it is refused with one line and the run goes on without it)")
    g.add_argument("--max-migrations", type=int, default=0, metavar="M",
                   help="policy.migrations: at most M migrations per event (default %(default)s)")
    g.add_argument("--measure", choices=MEASURES, action="append", default=[],
                   help="sif: report the largest Φπ − Φ★ within the bounds, per N, with its shortest witness (default: no measurement)")
    g.add_argument("--admission", choices=("auto", "free", "repack"), default="auto",
                   help="policy.admission: judge a refusal against the free GPUs (free) or a full repack of the "
                        "cluster (repack); auto: repack for schedulers that migrate (default)")
    g.add_argument("--demands", metavar="G,G,...", default=None,
                   help="policy.*: the job demands g that may arrive (default 1..8; hier-compass: 1..8 and 8p)")
    g.add_argument("--policy-opt", action="append", default=[], metavar="hier-compass:KEY=VALUE",
                   help="an option of hier-compass, e.g. hier-compass:panels_per_domain=2 (K, default "
                        f"{hier_policy.DEFAULT_K}; sizes are then D = 1..--max-nodes domains); repeatable")


def list_policies() -> int:
    for name in policy_names():
        print(name)
    return 0


def wanted(args: argparse.Namespace) -> bool:
    """The run is about one scheduler (--policy or --measure)."""
    return args.policy is not None or bool(args.measure)


def selected(args: argparse.Namespace) -> list[str]:
    """The policy.* ids a ``--policy`` run checks (every one when none is named)."""
    if args.policy is None:
        raise UsageError("--measure needs --policy NAME (see --list-policies)")
    if args.theorem or args.variant is not None:
        raise UsageError("--policy checks the policy.* claims of any scheduler; --theorem and --variant are for "
                         "COMPASS's own claims")
    with usage_on(ValueError):
        named = resolve(args.claim) if args.claim else []
    foreign = [c for c in named if not owns(c)]
    if foreign:
        raise UsageError(f"--policy checks the policy.* claims; {', '.join(foreign)} is a COMPASS claim "
                         f"(run it without --policy)")
    ids = named or ([] if args.measure and not args.all else list(CLAIM_IDS))
    if "sif" in args.measure:
        ids.append(MEASURE_SIF)
    return ids


def without_policy(ids: list[str]) -> list[str]:
    """A run without --policy may not select policy.* claims (they need a scheduler)."""
    bad = [c for c in ids if owns(c)]
    if bad:
        raise UsageError(f"{', '.join(bad)}: the policy.* claims check a scheduler; give --policy NAME "
                         f"(see --list-policies)")
    return ids


def bounds(args: argparse.Namespace, given: Bounds) -> Bounds:
    """The policy defaults for every search bound not given on the command line (the flags'
    argparse default is None)."""
    out = given
    defaults = hier_policy.default_bounds(args.policy_opt) if args.policy == hier_policy.NAME else POLICY_BOUNDS
    for field in POLICY_BOUNDS:
        if getattr(args, field) is None:
            out = replace(out, **{field: defaults[field]})
    if args.policy == hier_policy.NAME and (out.every_n or args.plot):
        raise UsageError(f"--max-nodes all and --plot are for flat schedulers; {hier_policy.NAME} is "
                         f"checked on D = 1..--max-nodes domains")
    if args.event_time_limit is not None and not (0 < args.event_time_limit < float("inf")):
        raise UsageError(f"--event-time-limit {args.event_time_limit}: a positive finite number of seconds")
    out = replace(out, strict=args.strict, event_time_limit=args.event_time_limit)
    if out.every_n:  # the cutoff's cap follows the policy's job and width bounds
        out = every_n_bounds(out)
    if out.min_nodes > out.max_nodes:
        raise UsageError(f"--min-nodes {out.min_nodes} > --max-nodes {out.max_nodes}")
    return out


def target_and_params(args: argparse.Namespace) -> tuple[PolicyTarget, PolicyParams]:
    """The scheduler (built and protocol-checked once: a gap is one line, exit 2) and the claims'
    parameters from the flags."""
    with usage_on(PolicyError, ValueError):
        target = hier_policy.hier_target(hier_policy.parse_opts(args.policy_opt)) if args.policy == hier_policy.NAME \
            else PolicyTarget.named(args.policy)
        if args.policy_opt and args.policy != hier_policy.NAME:
            raise PolicyError(f"--policy-opt: verify takes options of {hier_policy.NAME} only")
        if args.policy == hier_policy.NAME and args.random:
            raise PolicyError(f"--random: sampling is for flat schedulers; {hier_policy.NAME} is checked exhaustively")
        if args.ties == "all" and args.policy != hier_policy.NAME:  # hier-compass: HierCompass.ties (reading H7)
            require_ties(target)
    try:
        k = int(args.bound)
    except ValueError:
        raise UsageError(f"--bound {args.bound!r}: with --policy, an integer k (policy.sif: Φπ − Φ★ ≤ k)") from None
    if k < 0 or args.max_migrations < 0:
        raise UsageError("--bound and --max-migrations must be >= 0")
    demands: tuple[int, ...] = ALL_G
    if args.demands:
        try:
            demands = tuple(sorted({int(x) for x in args.demands.split(",") if x.strip()}))
        except ValueError:
            raise UsageError(f"--demands {args.demands!r}: not a comma-separated list of integers") from None
        if not demands or not all(1 <= g <= 8 for g in demands):
            raise UsageError(f"--demands {args.demands!r}: every g must be in 1..8")
    migrating = target.migrating if args.admission == "auto" else args.admission == "repack"
    return target, PolicyParams(k, args.max_migrations, migrating, demands)

"""Imports every module that registers a policy (see ``heuristics.policy.register``)."""
import heuristics.baselines  # noqa: F401,E402
import heuristics.compass  # noqa: F401
import heuristics.sifopt, heuristics.repack_baselines  # noqa: F401,E401
import heuristics.hier_compass  # noqa: F401

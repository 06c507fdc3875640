"""Imports every module that registers a policy (see ``heuristics.gpu.policy.register``)."""
import heuristics.gpu.baselines  # noqa: F401,E402
import heuristics.gpu.compass  # noqa: F401
import heuristics.gpu.sifopt, heuristics.gpu.repack_baselines  # noqa: F401,E401
import heuristics.gpu.hier_compass  # noqa: F401

"""Shared pytest options (``--runslow`` enables tests marked ``@pytest.mark.slow``) and the
builders of simulator inputs the mixed-capacity tests share (docs/heterogeneous.md)."""
import pytest

from heuristics.gpu.node_list import GpuNode, NodeList
from heuristics.gpu.trace import TraceJob


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False, help="run tests marked slow")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def tj(i, submit, duration, g, w=1):
    """Trace job ``i``: ``w`` instances of ``g`` GPUs, submitted at ``submit`` for ``duration``."""
    return TraceJob(i, float(submit), float(duration), g, w)


def mixed_nodes(caps, models=None):
    """A node list with one node per capacity in ``caps`` (model "M" unless ``models`` names them)."""
    models = models or ["M"] * len(caps)
    return NodeList("test", tuple(GpuNode(f"n{i}", c, m, i + 2) for i, (c, m) in enumerate(zip(caps, models))))

"""Claims, the explorer and the command-line tools; imports ``oracle`` and ``heuristics``."""
import heuristics  # noqa: F401  (its import guards the compiled build before any hot module loads)

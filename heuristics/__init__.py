"""The systems under test (scheduler heuristics), importing only ``oracle`` for metrics."""
from heuristics.compiled import guard

guard()

"""Imports every module that registers a policy (see ``heuristics.policy.register``)."""

"""Benchmarks for nflow-compat (run with ``python -m bench``; see bench/README.md).

``causal_chain`` times one causal model (a sine through a chain of gain and saturation
blocks into a recorder) in nflow-compat, PathSim, bdsim and a hand-written Python loop,
in one process, checks that all four produce the same trace, and writes
``bench/results/causal_chain.json``.
"""

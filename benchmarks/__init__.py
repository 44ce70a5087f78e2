"""Benchmarks behind the README's performance figures.

Each is a module run as ``python -m benchmarks.<name>``; each has ``--help``, a
``--quick`` mode (under a minute), prints a table, and writes ``result.json`` (schema in
:mod:`benchmarks._common`) and PNG plots to ``benchmarks/results/<name>/``:

* ``throughput`` - the SDK against a raw-frame blaster on the same (sink) broker.
* ``faults``     - send latency and success per routing strategy under broker faults.
* ``memory``     - RSS, tracemalloc, tasks and connections over a million sends.

``python -m benchmarks.routing_sim [SEED]`` is different: a pure, seeded simulation that
replays broker traces through each router on a virtual clock (no cluster, no sockets)
and prints one table; the latency_fault tests pin its figures.

Figures are ratios measured within one run: the machines these run on are shared.
"""

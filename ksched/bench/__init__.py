"""``ksched bench``: scheduler_perf-shaped workloads at 5,000 nodes, measured the way upstream measures.

The embedded cluster (``ksched sim serve``) and the scheduler (``ksched run``) each run in a process of
their own; this package only drives them: it talks to the cluster over HTTP (its Kubernetes API and its
``/admin`` endpoints) and to the scheduler over its ``/metrics`` and ``/debug/profile`` endpoints, and
reads both processes' CPU time and peak memory (and its own) from ``/proc``. It therefore imports neither the
scheduler nor the embedded cluster: what it measures is exactly the production client path.

Modules: :mod:`~ksched.bench.workload` (the YAML format), :mod:`~ksched.bench.procs` (the two child
processes), :mod:`~ksched.bench.driver` (one run), :mod:`~ksched.bench.stats` and
:mod:`~ksched.bench.promtext` (the figures), :mod:`~ksched.bench.report` (results.json, Markdown,
``--compare``), :mod:`~ksched.bench.chart` (the optional PNG).
"""

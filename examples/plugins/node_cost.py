"""NodeCost: prefer cheaper nodes, by a cost written in a node label.

Nodes carry their price as an integer label (``example.com/hourly-cost: "37"``, any unit). Score
returns the raw cost of every node in one vectorized read of the label column; NormalizeScore maps
the candidates' costs onto 0..100 (cheapest 100, dearest 0). Nodes without a valid label get
``unlabeledScore`` (default 0, i.e. "assume it is expensive").

Config::

    pluginConfig:
    - name: NodeCost
      args: {labelKey: example.com/hourly-cost, unlabeledScore: 0}
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ksched.framework import api

DEFAULT_LABEL = "example.com/hourly-cost"
_UNKNOWN = -1


class NodeCost:
    name = "NodeCost"

    def __init__(self, args: dict[str, Any], handle: api.Handle) -> None:
        args = dict(args)
        self.label_key = args.pop("labelKey", DEFAULT_LABEL)
        if not isinstance(self.label_key, str) or not self.label_key:
            raise ValueError(f"labelKey: must be a non-empty string, got {self.label_key!r}")
        self.unlabeled_score = args.pop("unlabeledScore", 0)
        if not isinstance(self.unlabeled_score, int) or not 0 <= self.unlabeled_score <= api.MAX_NODE_SCORE:
            raise ValueError(f"unlabeledScore: must be an integer in [0, 100], got {self.unlabeled_score!r}")
        if args:
            raise ValueError(f"unknown field(s) {sorted(args)}; known: labelKey, unlabeledScore")

    def score(
        self, state: api.CycleState, pod: api.Pod, cluster: api.ClusterView, feasible: np.ndarray
    ) -> np.ndarray:
        cost, parsed = cluster.label_int(self.label_key)
        return np.where(parsed & (cost >= 0), cost, _UNKNOWN)

    def normalize_score(
        self, state: api.CycleState, pod: api.Pod, scores: api.Scores, feasible: np.ndarray
    ) -> api.Scores:
        assert isinstance(scores, np.ndarray)
        known = feasible & (scores != _UNKNOWN)
        if not known.any():
            return self.unlabeled_score
        lo = int(scores.min(where=known, initial=np.iinfo(np.int64).max))
        hi = int(scores.max(where=known, initial=0))
        if hi == lo:
            normalized = np.full(scores.shape, api.MAX_NODE_SCORE, dtype=np.int64)
        else:
            normalized = (hi - scores) * api.MAX_NODE_SCORE // (hi - lo)
        return np.where(known, normalized, self.unlabeled_score)

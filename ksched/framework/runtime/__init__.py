"""The framework's runtime: one runner per extension point, composed by
:meth:`Framework.schedule_pod` (:mod:`.framework`).

================  ===========================  ==========================================
module            upstream                     what it runs
================  ===========================  ==========================================
``prefilter``     RunPreFilterPlugins          PreFilter: skip, reject, narrow the nodes
``filtering``     findNodesThatPassFilters,    Filter over every row; the two-pass rule
                  RunFilterPluginsWith...      for nominated pods
``scoring``       RunPreScorePlugins,          PreScore; Score, NormalizeScore, weights,
                  RunScorePlugins              the range check
``select``        selectHost                   the best row, seeded tie-break, the
                                               best-row shortcut
``postfilter``    RunPostFilterPlugins         PostFilter (preemption)
``binding``       RunReserve/Permit/PreBind/   the binding cycle's points
                  PostBind
``sampling``      numFeasibleNodesToFind,      percentageOfNodesToScore: the nodes kept,
                  nextStartNodeIndex           the round-robin start
``timing``        metrics recorder             extension-point and sampled plugin durations,
                                               plugin evaluations
================  ===========================  ==========================================
"""

from ksched.framework.result import CycleResult, PluginScores
from ksched.framework.runtime.framework import NO_NODES, ROW_LOCAL_FILTERS, Framework
from ksched.framework.runtime.sampling import StartIndex
from ksched.framework.runtime.timing import SAMPLE_EVERY, CycleTimer, FrameworkRecorder

__all__ = [
    "NO_NODES",
    "ROW_LOCAL_FILTERS",
    "SAMPLE_EVERY",
    "CycleResult",
    "CycleTimer",
    "Framework",
    "FrameworkRecorder",
    "PluginScores",
    "StartIndex",
]

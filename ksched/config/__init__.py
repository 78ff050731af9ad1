"""KubeSchedulerConfiguration v1: load, default, merge and validate, with upstream's semantics.

Public door of ``ksched.config``::

    cfg = load_config("config.yaml")          # or config_from_dict(doc), default_config()
    prof = cfg.profile("default-scheduler")
    [p.name for p in prof.plugins["filter"]]  # effective, ordered, after MultiPoint expansion
    prof.score_weights["TaintToleration"]     # 3
    prof.plugin_args["NodeResourcesFit"]      # NodeResourcesFitArgs(...)

Every problem is a :class:`ksched.errors.ConfigError` naming the field path (and the file).
This package imports only ``ksched.errors``, the stdlib and PyYAML.
"""

from ksched.config.load import config_from_dict, default_config, load_config
from ksched.config.types import (
    ClientConnection,
    DefaultPreemptionArgs,
    InterPodAffinityArgs,
    LeaderElection,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PluginRef,
    PodTopologySpreadArgs,
    Profile,
    ResourceSpec,
    SchedulerConfiguration,
    ScoringStrategy,
    UtilizationShapePoint,
    VolumeBindingArgs,
)

__all__ = [
    "ClientConnection",
    "DefaultPreemptionArgs",
    "InterPodAffinityArgs",
    "LeaderElection",
    "NodeAffinityArgs",
    "NodeResourcesBalancedAllocationArgs",
    "NodeResourcesFitArgs",
    "PluginRef",
    "PodTopologySpreadArgs",
    "Profile",
    "ResourceSpec",
    "SchedulerConfiguration",
    "ScoringStrategy",
    "UtilizationShapePoint",
    "VolumeBindingArgs",
    "config_from_dict",
    "default_config",
    "load_config",
]

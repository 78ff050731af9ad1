"""Example out-of-tree plugins for ksched (see docs/plugins.md).

- :mod:`.node_cost`: a Score plugin preferring cheaper nodes by a numeric node label.
- :mod:`.system_reserve`: a Filter plugin keeping a share of every node free for system pods.
- :mod:`.gang`: a Permit plugin holding the members of a gang until all of them have a node.

Load them with ``ksched run --plugin examples.plugins.node_cost:NodeCost ...`` from the repository
root, and enable them in a KubeSchedulerConfiguration (``examples/plugins/config.yaml``).
"""

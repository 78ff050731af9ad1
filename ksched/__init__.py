"""ksched: a Kubernetes scheduler that makes kube-scheduler's decisions over numpy arrays."""

__version__ = "0.1.0"

__all__ = ["__version__"]

"""ksched.kube: talking to the Kubernetes API.

Configuration (kubeconfig, ``KUBECONFIG``, in-cluster) is loaded by the ``kubernetes`` package and
turned into one aiohttp session (:mod:`~ksched.kube.connection`), run by a dedicated I/O thread
(:mod:`~ksched.kube.io_thread`) that carries every request: raw REST verbs with retries and a write
rate limit (:mod:`~ksched.kube.client`), list/watch informers that emit decoded model records
(:mod:`~ksched.kube.informer`, :mod:`~ksched.kube.events`), the scheduler's writes
(:mod:`~ksched.kube.writers`) and the fence every write passes first (:mod:`~ksched.kube.fence`).
Imports only ``ksched.model``, ``ksched.errors`` and third-party code.
"""

from ksched.kube.client import ApiClient, ApiConnectionError, ClientSettings, RetrySettings, status_error
from ksched.kube.connection import (
    Connection,
    Credentials,
    KubeConfigError,
    incluster_connection,
    load_connection,
)
from ksched.kube.events import Deleted, InformerEvent, Invalid, Relisted, Synced, Upserted
from ksched.kube.informer import Informer, InformerSettings
from ksched.kube.io_thread import IOThread
from ksched.kube.ratelimit import Backoff, BackoffSettings, TokenBucket, backoff_delay

__all__ = [
    "ApiClient",
    "ApiConnectionError",
    "Backoff",
    "BackoffSettings",
    "ClientSettings",
    "Connection",
    "Credentials",
    "Deleted",
    "IOThread",
    "Informer",
    "InformerEvent",
    "InformerSettings",
    "Invalid",
    "KubeConfigError",
    "Relisted",
    "RetrySettings",
    "Synced",
    "TokenBucket",
    "Upserted",
    "backoff_delay",
    "incluster_connection",
    "load_connection",
    "status_error",
]

"""What the scheduler's own HTTPS endpoint is told by the command line: kube-scheduler's
SecureServing, Authentication and Authorization option groups (cmd/kube-scheduler/app/options).

The flag parser (:mod:`ksched.cli`) fills these; :mod:`ksched.server` acts on every field. Defaults
are kube-scheduler's, except the bind address: loopback unless told otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ksched.errors import InputError

DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")


@dataclass(frozen=True, slots=True, kw_only=True)
class SecureServingOptions:
    """``--bind-address``, ``--secure-port``, ``--cert-dir``, ``--tls-*``."""

    bind_address: str = "127.0.0.1"
    secure_port: int = 10259
    """0 serves nothing over HTTPS, as upstream."""
    cert_dir: str = ""
    """Where a generated self-signed pair is kept when no --tls-cert-file is given ("" : in memory)."""
    tls_cert_file: str = ""
    tls_private_key_file: str = ""
    tls_min_version: str = ""
    """Go's names (VersionTLS12, VersionTLS13); "" is TLS 1.2."""
    tls_cipher_suites: tuple[str, ...] = ()
    """IANA names, as upstream's --tls-cipher-suites; () is the library's secure default."""
    tls_sni_cert_keys: tuple[str, ...] = ()
    """``cert,key[:name1,name2]`` entries of --tls-sni-cert-key."""
    permit_port_sharing: bool = False
    permit_address_sharing: bool = False
    http2_max_streams_per_connection: int = 0
    disable_http2_serving: bool = False
    """--disable-http2-serving: serve HTTP/1.1 only."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthenticationOptions:
    """Delegated authentication: ``--authentication-*``, ``--client-ca-file``, ``--requestheader-*``."""

    kubeconfig: str = ""
    """--authentication-kubeconfig: where TokenReviews go and the authentication ConfigMap is read
    ("" : the scheduler's own connection when in a cluster, else anonymous only, as upstream's
    RemoteKubeConfigFileOptional)."""
    skip_lookup: bool = False
    tolerate_lookup_failure: bool = True
    """kube-scheduler sets TolerateInClusterLookupFailure."""
    token_webhook_cache_ttl_s: float = 10.0
    anonymous: bool = True
    """--anonymous-auth; unauthenticated requests become system:anonymous (then authorization)."""
    client_ca_file: str = ""
    requestheader_client_ca_file: str = ""
    requestheader_allowed_names: tuple[str, ...] = ()
    requestheader_username_headers: tuple[str, ...] = ("x-remote-user",)
    requestheader_uid_headers: tuple[str, ...] = ()
    requestheader_group_headers: tuple[str, ...] = ("x-remote-group",)
    requestheader_extra_headers_prefix: tuple[str, ...] = ("x-remote-extra-",)


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthorizationOptions:
    """Delegated authorization: ``--authorization-*``."""

    kubeconfig: str = ""
    """--authorization-kubeconfig: where SubjectAccessReviews go ("" : as for authentication)."""
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS
    always_allow_groups: tuple[str, ...] = ("system:masters",)
    allow_cache_ttl_s: float = 10.0
    deny_cache_ttl_s: float = 10.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ServingOptions:
    """Everything the endpoint needs from the command line."""

    secure: SecureServingOptions = field(default_factory=SecureServingOptions)
    authentication: AuthenticationOptions = field(default_factory=AuthenticationOptions)
    authorization: AuthorizationOptions = field(default_factory=AuthorizationOptions)
    insecure_port: int | None = None
    """ksched's own --insecure-port: plain HTTP, no authentication, off unless given."""
    insecure_bind_address: str = "127.0.0.1"

    @property
    def serves_nothing(self) -> bool:
        """``--secure-port=0`` and no ``--insecure-port``: no endpoint, so no TLS or auth stack."""
        return not self.secure.secure_port and self.insecure_port is None

    def refuse_unsupported(self) -> None:
        """Raise :class:`InputError` for a serving flag ksched does not act on, served or not."""
        streams = self.secure.http2_max_streams_per_connection
        if streams:
            raise InputError(
                f"--http2-max-streams-per-connection={streams}: ksched serves HTTP/1.1 only; leave it unset"
            )

"""The serving, authentication and authorization flags -> :class:`ksched.server.options.ServingOptions`."""

from __future__ import annotations

from ksched.cli.pflag import FlagError, Parsed
from ksched.server.options import (
    AuthenticationOptions,
    AuthorizationOptions,
    SecureServingOptions,
    ServingOptions,
)

TLS_VERSIONS = ("VersionTLS10", "VersionTLS11", "VersionTLS12", "VersionTLS13")


def _port(parsed: Parsed, name: str, *, low: int) -> int:
    port = int(parsed[name])
    if not low <= port <= 65535:
        raise FlagError(f"--{name} {port} must be between {low} and 65535, inclusive")
    return port


def serving_options(parsed: Parsed) -> ServingOptions:
    """Upstream's SecureServingOptions/Delegating*Options validation, then the options."""
    tls_min = parsed["tls-min-version"]
    if tls_min and tls_min not in TLS_VERSIONS:
        raise FlagError(
            f'--tls-min-version: unknown tls version "{tls_min}" (one of {", ".join(TLS_VERSIONS)})'
        )
    insecure = int(parsed["insecure-port"])
    secure = SecureServingOptions(
        bind_address=parsed["bind-address"] or "0.0.0.0",
        secure_port=_port(parsed, "secure-port", low=0),
        cert_dir=parsed["cert-dir"],
        tls_cert_file=parsed["tls-cert-file"],
        tls_private_key_file=parsed["tls-private-key-file"],
        tls_min_version=tls_min,
        tls_cipher_suites=tuple(parsed["tls-cipher-suites"]),
        tls_sni_cert_keys=tuple(parsed["tls-sni-cert-key"]),
        permit_port_sharing=parsed["permit-port-sharing"],
        permit_address_sharing=parsed["permit-address-sharing"],
        http2_max_streams_per_connection=int(parsed["http2-max-streams-per-connection"]),
        disable_http2_serving=parsed["disable-http2-serving"],
    )
    authn = AuthenticationOptions(
        kubeconfig=parsed["authentication-kubeconfig"],
        skip_lookup=parsed["authentication-skip-lookup"],
        tolerate_lookup_failure=parsed["authentication-tolerate-lookup-failure"],
        token_webhook_cache_ttl_s=parsed["authentication-token-webhook-cache-ttl"],
        client_ca_file=parsed["client-ca-file"],
        requestheader_client_ca_file=parsed["requestheader-client-ca-file"],
        requestheader_allowed_names=tuple(parsed["requestheader-allowed-names"]),
        requestheader_username_headers=tuple(parsed["requestheader-username-headers"]),
        requestheader_uid_headers=tuple(parsed["requestheader-uid-headers"]),
        requestheader_group_headers=tuple(parsed["requestheader-group-headers"]),
        requestheader_extra_headers_prefix=tuple(parsed["requestheader-extra-headers-prefix"]),
    )
    authz = AuthorizationOptions(
        kubeconfig=parsed["authorization-kubeconfig"],
        always_allow_paths=tuple(parsed["authorization-always-allow-paths"]),
        allow_cache_ttl_s=parsed["authorization-webhook-cache-authorized-ttl"],
        deny_cache_ttl_s=parsed["authorization-webhook-cache-unauthorized-ttl"],
    )
    return ServingOptions(
        secure=secure,
        authentication=authn,
        authorization=authz,
        insecure_port=None if insecure < 0 else _port(parsed, "insecure-port", low=0),
    )

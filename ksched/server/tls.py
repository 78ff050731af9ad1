"""The serving certificate and the TLS settings of the secure port (upstream's SecureServingOptions).

- Certificate: ``--tls-cert-file``/``--tls-private-key-file``; without them a self-signed pair is
  generated as upstream's ``MaybeDefaultWithSelfSignedCerts("localhost", nil, [127.0.0.1])`` does
  (a throw-away CA signing a serving certificate for ``localhost`` and ``127.0.0.1``, valid one
  year, the chain in the certificate file). With ``--cert-dir`` it is kept there as
  ``kube-scheduler.crt``/``kube-scheduler.key`` and reused on the next start; else it lives in memory.
- ``--tls-min-version``: VersionTLS12 (the default) or VersionTLS13. VersionTLS10/11 are refused:
  Python's OpenSSL build is configured for TLS 1.2+, and a scrape endpoint has no old clients to serve.
- ``--tls-cipher-suites``: IANA names, mapped to OpenSSL's; an unknown or unavailable one fails.
  As in Go, the TLS 1.3 suites are always on and the names of TLS 1.3 suites change nothing.
- ``--tls-sni-cert-key``: ``cert,key[:name1,name2]``; a client naming one of the names (or, without
  names, one of the certificate's DNS names and common name) gets that certificate.

Client certificates: a context trusts the current client CAs (:class:`ClientCAs`) and asks for a
certificate (optional); the authenticators decide what a verified certificate means. Every
connection takes the newest context through the SNI callback, so a reloaded CA bundle applies to
the next handshake.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import logging
import os
import ssl
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ksched.errors import InputError
from ksched.server.options import SecureServingOptions

log = logging.getLogger(__name__)

PAIR_NAME = "kube-scheduler"
"""Upstream's file names in --cert-dir: kube-scheduler.crt and kube-scheduler.key."""
SELF_SIGNED_HOST = "localhost"
SELF_SIGNED_IPS = ("127.0.0.1",)

TLS_VERSIONS = {"VersionTLS12": ssl.TLSVersion.TLSv1_2, "VersionTLS13": ssl.TLSVersion.TLSv1_3}
REFUSED_TLS_VERSIONS = frozenset({"VersionTLS10", "VersionTLS11"})

CIPHER_SUITES = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA": "ECDHE-RSA-DES-CBC3-SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA": "DES-CBC3-SHA",
}
"""Go's (upstream's) IANA names -> OpenSSL's names, TLS 1.2 and older."""
TLS13_SUITES = frozenset({"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"})


@dataclass(frozen=True, slots=True)
class CertKey:
    """One certificate chain and key, as PEM files on disk (ssl loads chains only from files)."""

    cert_file: str
    key_file: str
    names: tuple[str, ...] = ()
    """SNI names this pair answers (empty for the default pair)."""


def min_version(name: str) -> ssl.TLSVersion:
    """``--tls-min-version`` as an ssl version; "" is TLS 1.2."""
    if not name:
        return ssl.TLSVersion.TLSv1_2
    if name in REFUSED_TLS_VERSIONS:
        raise InputError(
            f"--tls-min-version={name}: only TLS 1.2 and newer are served; use VersionTLS12 or VersionTLS13"
        )
    if name not in TLS_VERSIONS:
        raise InputError(f"--tls-min-version={name}: unknown; valid values are VersionTLS12, VersionTLS13")
    return TLS_VERSIONS[name]


def openssl_ciphers(names: Sequence[str]) -> str:
    """The OpenSSL cipher string for ``--tls-cipher-suites`` ("" : the library's default)."""
    out = []
    for name in names:
        if name in TLS13_SUITES:
            continue
        if name not in CIPHER_SUITES:
            raise InputError(
                f"--tls-cipher-suites: {name!r} is not a supported cipher suite; valid values: "
                + ", ".join(sorted((*CIPHER_SUITES, *TLS13_SUITES)))
            )
        out.append(CIPHER_SUITES[name])
    return ":".join(out)


def _san_names(cert: x509.Certificate) -> tuple[str, ...]:
    names: list[str] = []
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names.extend(san.get_values_for_type(x509.DNSName))
    except x509.ExtensionNotFound:
        pass
    cns = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if cns and isinstance(cns[0].value, str):
        names.append(cns[0].value)
    return tuple(dict.fromkeys(n.lower() for n in names))


def parse_sni(entry: str) -> CertKey:
    """One ``--tls-sni-cert-key`` value: ``cert,key`` or ``cert,key:name1,name2``."""
    files, _, names = entry.partition(":")
    cert, sep, key = files.partition(",")
    if not sep or not cert or not key or "," in key:
        raise InputError(f"--tls-sni-cert-key={entry!r}: expected cert,key or cert,key:name1,name2")
    listed = tuple(n.strip().lower() for n in names.split(",") if n.strip())
    if not listed:
        try:
            listed = _san_names(x509.load_pem_x509_certificate(Path(cert).read_bytes()))
        except (OSError, ValueError) as exc:
            raise InputError(f"--tls-sni-cert-key={entry!r}: cannot read certificate {cert}: {exc}") from exc
    return CertKey(cert, key, listed)


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def self_signed_pem(
    host: str = SELF_SIGNED_HOST, ips: Sequence[str] = SELF_SIGNED_IPS
) -> tuple[bytes, bytes]:
    """(certificate chain PEM, key PEM): a CA named ``<host>-ca@<unix time>`` signing a serving
    certificate ``<host>@<unix time>`` for ``host`` and ``ips``, valid one year (upstream's shape)."""
    now = dt.datetime.now(dt.UTC)
    stamp = int(now.timestamp())
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name(f"{host}-ca@{stamp}"))
        .issuer_name(_name(f"{host}-ca@{stamp}"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    sans: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    sans.append(x509.DNSName(host))
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(f"{host}@{stamp}"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=365))
        .add_extension(
            x509.KeyUsage(True, False, True, False, False, False, False, False, False), critical=True
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    chain = cert.public_bytes(serialization.Encoding.PEM) + ca.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    return chain, key_pem


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def serving_pair(opts: SecureServingOptions) -> CertKey:
    """The default certificate: the given files, the pair in --cert-dir, or a new self-signed one."""
    if opts.tls_cert_file or opts.tls_private_key_file:
        if not (opts.tls_cert_file and opts.tls_private_key_file):
            raise InputError("--tls-cert-file and --tls-private-key-file must be given together")
        return CertKey(opts.tls_cert_file, opts.tls_private_key_file)
    if opts.cert_dir:
        directory = Path(opts.cert_dir)
        cert, key = directory / f"{PAIR_NAME}.crt", directory / f"{PAIR_NAME}.key"
        if cert.is_file() and key.is_file():
            return CertKey(str(cert), str(key))
        chain, key_pem = self_signed_pem()
        try:
            directory.mkdir(parents=True, exist_ok=True)
            _write_private(cert, chain)
            _write_private(key, key_pem)
        except OSError as exc:
            raise InputError(f"--cert-dir={opts.cert_dir}: cannot write the self-signed pair: {exc}") from exc
        log.info("Generated self-signed cert (%s, %s)", cert, key)
        return CertKey(str(cert), str(key))
    chain, key_pem = self_signed_pem()
    directory = Path(tempfile.mkdtemp(prefix="ksched-serving-"))
    _write_private(directory / "tls.crt", chain)
    _write_private(directory / "tls.key", key_pem)
    log.info("Generated self-signed cert in-memory")
    # ssl loads chains only from files: a private (0700) temporary directory, read again whenever
    # the contexts are rebuilt, stands in for memory.
    return CertKey(str(directory / "tls.crt"), str(directory / "tls.key"))


class ServingTLS:
    """The server's TLS contexts: one per certificate, rebuilt when the client CAs change."""

    def __init__(
        self,
        opts: SecureServingOptions,
        client_cas: Callable[[], bytes],
        *,
        request_client_certs: bool = True,
        pair: CertKey | None = None,
    ) -> None:
        self._version = min_version(opts.tls_min_version)
        self._ciphers = openssl_ciphers(opts.tls_cipher_suites)
        self._default = pair or serving_pair(opts)
        self._sni = [parse_sni(e) for e in opts.tls_sni_cert_keys]
        self._client_cas = client_cas
        self._request = request_client_certs
        self._cas_loaded = b""
        self._by_name: dict[str, ssl.SSLContext] = {}
        self.context = self._build()
        """The context the listening socket starts with; each handshake switches to the newest."""

    def _one(self, pair: CertKey, cas: bytes) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = self._version
        if self._ciphers:
            try:
                ctx.set_ciphers(self._ciphers)
            except ssl.SSLError as exc:
                raise InputError(
                    f"--tls-cipher-suites: OpenSSL accepts none of {self._ciphers}: {exc}"
                ) from exc
        try:
            ctx.load_cert_chain(pair.cert_file, pair.key_file)
        except (OSError, ssl.SSLError) as exc:
            raise InputError(
                f"cannot load the serving certificate {pair.cert_file} and key {pair.key_file}: {exc}"
            ) from exc
        if cas:
            ctx.load_verify_locations(cadata=cas.decode())
        # OpenSSL keeps the verify mode of the context a connection started with, so every context
        # asks for a certificate whenever client CAs may be known now or after a reload.
        if cas or self._request:
            ctx.verify_mode = ssl.CERT_OPTIONAL
        return ctx

    def _build(self) -> ssl.SSLContext:
        cas = self._client_cas()
        default = self._one(self._default, cas)
        by_name: dict[str, ssl.SSLContext] = {}
        for pair in self._sni:
            ctx = self._one(pair, cas)
            for name in pair.names:
                by_name.setdefault(name, ctx)
        self._cas_loaded = cas
        self._by_name = by_name
        self._current = default
        default.sni_callback = self._pick
        return default

    def refresh(self) -> None:
        """Rebuild the contexts when the client CA bundle changed (called by the CA reloader)."""
        if self._client_cas() != self._cas_loaded:
            self._build()

    def _pick(self, sock: ssl.SSLObject | ssl.SSLSocket, server_name: str | None, _: ssl.SSLContext) -> None:
        chosen = self._by_name.get((server_name or "").lower())
        if chosen is None and server_name:
            _, _, parent = server_name.lower().partition(".")
            chosen = self._by_name.get(f"*.{parent}")
        sock.context = chosen or self._current

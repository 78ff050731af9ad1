"""Certificates for the secure embedded cluster: a cluster CA, a front-proxy CA and what they sign.

kube-apiserver trusts two authorities for client certificates: the cluster CA (``--client-ca-file``:
the user is the certificate's CommonName, its groups the Organization entries) and the front-proxy
CA (``--requestheader-client-ca-file``: a proxy whose certificate it signed may name the user in
``X-Remote-User`` headers). kubeadm creates both under /etc/kubernetes/pki; :class:`Authority`
creates them in memory (EC P-256 keys: fast to generate, accepted by Go, OpenSSL and kubectl) and
issues serving and client certificates from them.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_VALIDITY = datetime.timedelta(days=3650)
"""kubeadm's CA lifetime (ten years)."""
LEAF_VALIDITY = datetime.timedelta(days=365)
"""kubeadm's leaf certificate lifetime (one year)."""
_BACKDATE = datetime.timedelta(minutes=5)
"""Leaves start a little in the past, so a client whose clock lags slightly still accepts them."""


@dataclass(frozen=True, slots=True)
class KeyPair:
    """A PEM certificate and its PEM (PKCS#8, unencrypted) private key."""

    cert_pem: bytes
    key_pem: bytes

    def write(self, directory: Path, stem: str) -> tuple[Path, Path]:
        """Write ``stem.crt`` and ``stem.key`` (mode 0600) into ``directory``, as kubeadm names them."""
        directory.mkdir(parents=True, exist_ok=True)
        crt, key = directory / f"{stem}.crt", directory / f"{stem}.key"
        crt.write_bytes(self.cert_pem)
        key.touch(mode=0o600)
        key.write_bytes(self.key_pem)
        return crt, key


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


class Authority:
    """One self-signed CA that issues leaf certificates."""

    def __init__(self, common_name: str) -> None:
        self._key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        now = _now()
        self.common_name = common_name
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _BACKDATE)
            .not_valid_after(now + CA_VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=True,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        self.pair = KeyPair(self._cert.public_bytes(serialization.Encoding.PEM), _pem_key(self._key))

    @property
    def cert_pem(self) -> bytes:
        return self.pair.cert_pem

    def issue(
        self,
        common_name: str,
        organizations: tuple[str, ...] = (),
        *,
        server_names: tuple[str, ...] = (),
    ) -> KeyPair:
        """A leaf for ``common_name``: a client certificate, or with ``server_names`` (DNS names and
        IP addresses) a serving certificate. Organizations become the user's groups."""
        key = ec.generate_private_key(ec.SECP256R1())
        attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
        attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
        now = _now()
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server_names else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name(attrs))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _BACKDATE)
            .not_valid_after(now + LEAF_VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()), critical=False
            )
        )
        if server_names:
            builder = builder.add_extension(x509.SubjectAlternativeName(_sans(server_names)), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _pem_key(key))


def _sans(names: tuple[str, ...]) -> list[x509.GeneralName]:
    out: list[x509.GeneralName] = []
    for n in dict.fromkeys(names):
        try:
            out.append(x509.IPAddress(ipaddress.ip_address(n)))
        except ValueError:
            out.append(x509.DNSName(n))
    return out

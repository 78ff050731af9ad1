"""The secure port's TLS: versions (a TLS 1.1 client is refused), cipher names, the self-signed
pair and --cert-dir, SNI certificates and client certificates, over in-memory handshakes."""

from __future__ import annotations

import ssl
import tempfile
import warnings
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding

from ksched.errors import InputError
from ksched.server.options import SecureServingOptions
from ksched.server.tls import PAIR_NAME, ServingTLS, min_version, openssl_ciphers, parse_sni, serving_pair
from tests.unit.server.pki import CA


def handshake(
    server: ssl.SSLContext, client: ssl.SSLContext, name: str | None = "localhost"
) -> ssl.SSLObject:
    """Run a TLS handshake between two contexts over memory buffers; returns the server's side."""
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    cli = client.wrap_bio(c_in, c_out, server_hostname=name)
    srv = server.wrap_bio(s_in, s_out, server_side=True)
    done = {"c": False, "s": False}
    for _ in range(20):
        for side, obj in (("c", cli), ("s", srv)):
            if not done[side]:
                try:
                    obj.do_handshake()
                    done[side] = True
                except ssl.SSLWantReadError:
                    pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if all(done.values()):
            return srv
    raise AssertionError("handshake did not finish")


def _client(ca_pem: bytes | None = None, *, check: bool = True) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if ca_pem is None:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    else:
        ctx.load_verify_locations(cadata=ca_pem.decode())
        ctx.check_hostname = check
    return ctx


def _tls(opts: SecureServingOptions | None = None, cas: bytes = b"") -> ServingTLS:
    return ServingTLS(opts or SecureServingOptions(), lambda: cas, request_client_certs=bool(cas))


def test_self_signed_pair_serves_localhost_and_loopback() -> None:
    pair = serving_pair(SecureServingOptions())
    leaf, ca = x509.load_pem_x509_certificates(Path(pair.cert_file).read_bytes())
    tls = ServingTLS(SecureServingOptions(), lambda: b"", request_client_certs=False, pair=pair)
    srv = handshake(tls.context, _client(ca.public_bytes(Encoding.PEM)), "localhost")
    assert srv.version() == "TLSv1.3"
    san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in san.get_values_for_type(x509.DNSName)
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert leaf.subject.rfc4514_string().startswith("CN=localhost@")
    assert ca.subject.rfc4514_string().startswith("CN=localhost-ca@")


def test_cert_dir_keeps_the_pair(tmp_path: Path) -> None:
    opts = SecureServingOptions(cert_dir=str(tmp_path / "certs"))
    first = serving_pair(opts)
    assert first.cert_file == str(tmp_path / "certs" / f"{PAIR_NAME}.crt")
    assert (tmp_path / "certs" / f"{PAIR_NAME}.key").stat().st_mode & 0o077 == 0
    before = Path(first.cert_file).read_bytes()
    assert Path(serving_pair(opts).cert_file).read_bytes() == before, "an existing pair is reused"


def test_a_tls_11_client_is_refused() -> None:
    client = _client()
    client.set_ciphers("DEFAULT:@SECLEVEL=0")
    with warnings.catch_warnings():  # the client side of this test is deliberately obsolete
        warnings.simplefilter("ignore", DeprecationWarning)
        client.minimum_version = ssl.TLSVersion.TLSv1_1
        client.maximum_version = ssl.TLSVersion.TLSv1_1
    with pytest.raises(ssl.SSLError):
        handshake(_tls().context, client)


def test_min_version_13() -> None:
    tls = _tls(SecureServingOptions(tls_min_version="VersionTLS13"))
    client = _client()
    client.maximum_version = ssl.TLSVersion.TLSv1_2
    with pytest.raises(ssl.SSLError):
        handshake(tls.context, client)
    assert handshake(tls.context, _client()).version() == "TLSv1.3"


@pytest.mark.parametrize("name", ["VersionTLS10", "VersionTLS11", "TLS12", "1.2"])
def test_refused_min_versions(name: str) -> None:
    with pytest.raises(InputError, match="--tls-min-version"):
        min_version(name)


def test_cipher_suites() -> None:
    names = ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256"]
    assert openssl_ciphers(names) == "ECDHE-RSA-AES128-GCM-SHA256"
    with pytest.raises(InputError, match="TLS_BOGUS"):
        openssl_ciphers(["TLS_BOGUS"])
    tls = _tls(SecureServingOptions(tls_cipher_suites=("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",)))
    client = _client()
    client.maximum_version = ssl.TLSVersion.TLSv1_2
    srv = handshake(tls.context, client)
    assert srv.cipher()[0] == "ECDHE-RSA-AES256-GCM-SHA384"


def test_sni_certificates(tmp_path: Path) -> None:
    ca = CA("sni-ca")
    cert, key = ca.issue("metrics.example", server=True).write(tmp_path, "sni")
    assert parse_sni(f"{cert},{key}").names == ("localhost", "metrics.example")
    opts = SecureServingOptions(tls_sni_cert_keys=(f"{cert},{key}:scrape.example",))
    tls = _tls(opts)
    got = handshake(tls.context, _client(ca.pem, check=False), "scrape.example")
    assert got.context is not tls.context
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(tls.context, _client(ca.pem, check=False), "other.example")
    with pytest.raises(InputError, match="cert,key"):
        parse_sni("only-a-cert")


def test_client_certificates_and_ca_reload() -> None:
    old, new = CA("old-client-ca"), CA("new-client-ca")
    cas = {"pem": old.pem}
    tls = ServingTLS(SecureServingOptions(), lambda: cas["pem"], request_client_certs=True)
    client = _client()
    person = new.issue("erin")
    with tempfile.TemporaryDirectory() as d:
        cert, key = person.write(Path(d), "erin")
        client.load_cert_chain(cert, key)
        with pytest.raises(ssl.SSLError):
            handshake(tls.context, client)
        cas["pem"] = new.pem
        tls.refresh()
        srv = handshake(tls.context, client)
    assert x509.load_der_x509_certificate(srv.getpeercert(binary_form=True)).subject == person.cert.subject

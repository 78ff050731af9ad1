"""A process told to serve nothing (``--secure-port=0``, no ``--insecure-port``) loads no serving stack."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ksched.errors import InputError
from ksched.server.options import SecureServingOptions, ServingOptions

NO_PORT = SecureServingOptions(secure_port=0)


@pytest.mark.parametrize(
    ("options", "nothing"),
    [
        pytest.param(ServingOptions(), False, id="default secure port"),
        pytest.param(ServingOptions(secure=NO_PORT), True, id="secure port 0"),
        pytest.param(ServingOptions(secure=NO_PORT, insecure_port=0), False, id="insecure port 0 (any free)"),
    ],
)
def test_serves_nothing(options: ServingOptions, nothing: bool) -> None:
    assert options.serves_nothing is nothing


def test_serving_nothing_leaves_the_tls_and_auth_stack_unimported() -> None:
    code = (
        "import sys\n"
        "from ksched.runner import RunOptions, _serve\n"
        "from ksched.server.options import SecureServingOptions, ServingOptions\n"
        "_serve(None, None, RunOptions(serving=ServingOptions(secure=SecureServingOptions(secure_port=0))))\n"
        "print(sorted(m for m in sys.modules if m in ('ksched.server.serve', 'ksched.server.authn')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("secure_port", [10259, 0])
def test_http2_max_streams_is_refused_whether_or_not_anything_is_served(secure_port: int) -> None:
    from ksched.runner import RunOptions, _serve

    secure = SecureServingOptions(secure_port=secure_port, http2_max_streams_per_connection=100)
    with pytest.raises(
        InputError, match=r"--http2-max-streams-per-connection=100: ksched serves HTTP/1\.1 only"
    ):
        _serve(None, None, RunOptions(serving=ServingOptions(secure=secure)))  # type: ignore[arg-type]

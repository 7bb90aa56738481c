"""Credentials never reach the screen."""

from __future__ import annotations

from probetui.redact import MASK, is_secret_header, mask, secret_values
from probetui.spec.model import Container, HTTPGetAction, HTTPHeader, Probe


def test_secret_looking_header_names() -> None:
    for name in (
        "Authorization",
        "Cookie",
        "X-Api-Key",
        "X-Auth-Token",
        "client_secret",
        "Password",
    ):
        assert is_secret_header(name), name
    for name in ("Accept", "Host", "X-Request-Id", "User-Agent"):
        assert not is_secret_header(name), name


def test_known_values_urls_and_pairs_are_masked() -> None:
    c = Container(
        name="app",
        readiness_probe=Probe(
            http_get=HTTPGetAction(
                port=80, http_headers=(HTTPHeader("Authorization", "Bearer tok-123456"),)
            )
        ),
    )
    secrets = secret_values([c])
    assert "Bearer tok-123456" in secrets and "tok-123456" in secrets
    assert mask("echo: tok-123456 seen", secrets) == f"echo: {MASK} seen"
    assert mask("http://user:pw@127.0.0.1/x") == f"http://user:{MASK}@127.0.0.1/x"
    assert mask("GET /health?token=abc&x=1") == f"GET /health?token={MASK}&x=1"
    assert mask("sent Authorization: Basic dXNlcjpwYXNz") == f"sent Authorization: {MASK}"
    assert (
        mask("HTTP probe failed with statuscode: 503") == "HTTP probe failed with statuscode: 503"
    )

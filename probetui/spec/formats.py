"""Check the formats of `k8s.io/apimachinery/pkg/util/validation` that probes meet.

`IsValidPortNum`, `IsValidPortName`, `IsDNS1123Label`, `IsHTTPHeaderName`, with upstream's
message texts. Each returns the list of what is wrong, empty when the value is fine.
"""

from __future__ import annotations

import re

__all__ = ["is_dns1123_label", "is_http_header_name", "is_valid_port_name", "is_valid_port_num"]

_PORT_NAME_CHARSET = re.compile(r"^[-a-z0-9]+$")
_PORT_NAME_LETTER = re.compile(r"[a-z]")
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL = re.compile(f"^{_DNS1123_LABEL_FMT}$")
_DNS1123_SUBDOMAIN = re.compile(f"^{_DNS1123_LABEL_FMT}(\\.{_DNS1123_LABEL_FMT})*$")
_HTTP_HEADER_NAME_FMT = "[-A-Za-z0-9]+"
_HTTP_HEADER_NAME = re.compile(f"^{_HTTP_HEADER_NAME_FMT}$")


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    # validation.RegexError, including its "'a',  or 'b'," spacing
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def is_valid_port_num(port: int) -> list[str]:
    """`IsValidPortNum`: 1-65535."""
    if 1 <= port <= 65535:
        return []
    return ["must be between 1 and 65535, inclusive"]


def is_valid_port_name(name: str) -> list[str]:
    """`IsValidPortName` (IANA_SVC_NAME): 1-15 of [-a-z0-9], a letter, no edge or double '-'."""
    errs: list[str] = []
    if len(name) > 15:
        errs.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARSET.match(name):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _PORT_NAME_LETTER.search(name):
        errs.append("must contain at least one letter (a-z)")
    if "--" in name:
        errs.append("must not contain consecutive hyphens")
    if name and (name[0] == "-" or name[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def is_dns1123_label(value: str) -> list[str]:
    """`IsDNS1123Label`: at most 63 of [-a-z0-9], starting and ending alphanumeric."""
    errs: list[str] = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _DNS1123_LABEL.match(value):
        if _DNS1123_SUBDOMAIN.match(value):
            errs.append("must not contain dots")
        else:
            errs.append(
                _regex_error(
                    "a lowercase RFC 1123 label must consist of lower case alphanumeric "
                    "characters or '-', and must start and end with an alphanumeric character",
                    _DNS1123_LABEL_FMT,
                    "my-name",
                    "123-abc",
                )
            )
    return errs


def is_http_header_name(value: str) -> list[str]:
    """`IsHTTPHeaderName`: one or more of [-A-Za-z0-9]."""
    if _HTTP_HEADER_NAME.match(value):
        return []
    return [
        _regex_error(
            "a valid HTTP header must consist of alphanumeric characters or '-'",
            _HTTP_HEADER_NAME_FMT,
            "X-Header-Name",
        )
    ]

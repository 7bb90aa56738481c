"""metav1.Status bodies, as the API server encodes them for errors and for exec's channel 3.

The shapes follow k8s.io/apimachinery/pkg/api/errors: `reason` names the failure class, `code`
is the HTTP status, `details` names the object and carries `causes` where upstream sets them.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

# HTTP status -> the StatusReason the apiserver pairs with it (api/errors.reasonForCode).
REASONS: dict[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def status(
    code: int,
    message: str,
    *,
    reason: str | None = None,
    details: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A Failure Status as the apiserver serialises it (kind and apiVersion set, empty metadata)."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason if reason is not None else REASONS.get(code, ""),
    }
    if details:
        body["details"] = details
    body["code"] = code
    return body


def not_found(resource: str, name: str, group: str = "") -> dict[str, Any]:
    what = f"{resource}.{group}" if group else resource
    details: dict[str, Any] = {"name": name, "kind": resource}
    if group:
        details["group"] = group
    return status(404, f'{what} "{name}" not found', details=details)


def bad_request(message: str) -> dict[str, Any]:
    return status(400, message)


def expired(message: str) -> dict[str, Any]:
    return status(410, message, reason="Expired")


def internal_error(cause: str) -> dict[str, Any]:
    # errors.NewInternalError: the message is prefixed and the cause repeated in details.
    return status(
        500,
        f"Internal error occurred: {cause}",
        details={"causes": [{"message": cause}]},
    )


def too_large_resource_version(requested: int, current: int) -> dict[str, Any]:
    # storage.NewTooLargeResourceVersionError: a 504 that tells clients to retry after 1 s.
    return status(
        504,
        f"Too large resource version: {requested}, current: {current}",
        reason="Timeout",
        details={
            "causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            ],
            "retryAfterSeconds": 1,
        },
    )


def injected(code: int) -> dict[str, Any]:
    """The body for a fault the test asked for, shaped like the real error of that code."""
    if code == 500:
        return internal_error("injected fault")
    body = status(code, f"injected fault ({code})")
    if code in (429, 503, 504):
        body.setdefault("details", {})["retryAfterSeconds"] = 1
    return body


def dumps(obj: Any) -> bytes:
    # The apiserver's JSON encoder ends every document with a newline.
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def response(body: dict[str, Any], headers: dict[str, str] | None = None) -> web.Response:
    extra = dict(headers or {})
    retry = body.get("details", {}).get("retryAfterSeconds")
    if retry is not None:
        extra.setdefault("Retry-After", str(retry))
    return web.Response(
        status=int(body.get("code", 500)),
        body=dumps(body),
        content_type="application/json",
        headers=extra,
    )


def json_response(obj: Any, status_code: int = 200) -> web.Response:
    return web.Response(status=status_code, body=dumps(obj), content_type="application/json")

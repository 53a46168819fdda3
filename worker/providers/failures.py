"""Classifying vendor failures into result statuses, with how long to wait before retrying.

The three SDKs raise different classes for the same things; what they share is an HTTP
status, headers and a body, so classification works on those.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from evalrelay.bridge.results.result import Status
from evalrelay.worker.providers.base import ProviderFailure

QUOTA_MARKERS = (
    "insufficient_quota",
    "exceeded your current quota",
    "billing",
    "credit balance",
    "spend limit",
    "quota exceeded",
)
"""A 429 (or 402) mentioning these will not pass by waiting: the account is out of quota."""


def classify_http(status: int, headers: Mapping[str, str], body: Any) -> ProviderFailure:
    text = body if isinstance(body, str) else json.dumps(body, default=str)
    message = f"HTTP {status}: {shorten(text)}"
    lowered = text.lower()
    if status in (402, 429) and any(marker in lowered for marker in QUOTA_MARKERS):
        return ProviderFailure(Status.QUOTA_EXHAUSTED, message)
    if status == 429:
        return ProviderFailure(
            Status.RATE_LIMITED, message, retry_after(headers, body), retryable=True
        )
    if status in (401, 403):
        return ProviderFailure(Status.INFRA_ERROR, f"{message} (check the key on this worker)")
    if status == 408 or status >= 500:
        return ProviderFailure(
            Status.INFRA_ERROR, message, retry_after(headers, body), retryable=True
        )
    return ProviderFailure(Status.INVALID_INPUT, message)


def classify_exception(exc: BaseException) -> ProviderFailure:
    """Any SDK's exception: by its HTTP status when it has one, else by its kind."""
    if isinstance(exc, ProviderFailure):
        return exc
    status = getattr(exc, "status_code", None) or getattr(exc, "code", None)
    response = getattr(exc, "response", None)
    if isinstance(status, int) and 100 <= status < 600:
        headers = dict(getattr(response, "headers", None) or {})
        body = getattr(exc, "body", None) or getattr(exc, "response_json", None) or str(exc)
        return classify_http(status, {k.lower(): v for k, v in headers.items()}, body)
    kind = type(exc).__name__
    if "Timeout" in kind or isinstance(exc, TimeoutError):
        return ProviderFailure(Status.TIMEOUT, f"{kind}: the request timed out", retryable=True)
    if "Connection" in kind or isinstance(exc, ConnectionError | OSError):
        return ProviderFailure(Status.INFRA_ERROR, f"{kind}: {exc}", retryable=True)
    return ProviderFailure(Status.INFRA_ERROR, f"{kind}: {exc}")


def retry_after(headers: Mapping[str, str], body: Any = None) -> float | None:
    """Seconds to wait, from Retry-After, the vendors' reset headers, or Gemini's RetryInfo."""
    value = headers.get("retry-after-ms")
    if value and _number(value) is not None:
        return float(value) / 1000
    value = headers.get("retry-after")
    if value:
        seconds = _number(value)
        return seconds if seconds is not None else _until(value)
    for name in ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"):
        if headers.get(name):
            return _duration(headers[name])
    for name in ("anthropic-ratelimit-requests-reset", "anthropic-ratelimit-tokens-reset"):
        if headers.get(name):
            return _until(headers[name])
    match = re.search(r'"retryDelay"\s*:\s*"([\d.]+)s"', json.dumps(body, default=str))
    return float(match.group(1)) if match else None


def _number(text: str) -> float | None:
    try:
        return max(0.0, float(text))
    except ValueError:
        return None


def _duration(text: str) -> float | None:
    """OpenAI's reset durations: `1s`, `250ms`, `6m0s`, `1h2m3.5s`."""
    parts = re.findall(r"([\d.]+)(ms|h|m|s)", text)
    if not parts:
        return None
    scale = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    return sum(float(n) * scale[unit] for n, unit in parts)


def _until(text: str) -> float | None:
    """An HTTP date or an RFC 3339 time, as seconds from now."""
    from email.utils import parsedate_to_datetime

    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


MESSAGE_CHARS = 500
"""How much of a vendor's error text a result keeps."""

STDERR_CHARS = 2000
"""How much of the end of a command's standard error a result keeps."""

_TOKEN = re.compile(r"[A-Za-z0-9_\-+/=.:]+")
"""What a key looks like: a cut is never made inside such a run of characters."""


def shorten(text: str, limit: int = MESSAGE_CHARS) -> str:
    """The start of `text`, cut between tokens: a key the cut would split is left out whole,
    never shown in part (masking only recognises whole keys)."""
    if len(text) <= limit:
        return text
    cut = limit
    while cut > 0 and _TOKEN.fullmatch(text[cut - 1 : cut + 1]):
        cut -= 1
    return text[:cut] + "…"


def tail(text: str, limit: int) -> str:
    """The end of `text`, cut between tokens, as `shorten` cuts the start."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    while cut < len(text) and _TOKEN.fullmatch(text[cut - 1 : cut + 1]):
        cut += 1
    return "…" + text[cut:]

"""`serve` beyond loopback answers only those who hold its token: results hold prompts and
answers, `/metrics` the campaigns' names, and anyone on the network could read them.

The token is `EVALRELAY_SERVE_TOKEN`, or the content of the file `EVALRELAY_SERVE_TOKEN_FILE`
names (a mounted secret: the process reads it, no entry point puts it in the
environment). A request shows it as `Authorization: Bearer TOKEN` (Prometheus, curl), or
as the cookie a browser gets by opening any page once with `?token=TOKEN`: the answer sets
it (HttpOnly, SameSite=Strict) and sends the browser to the same page without the token in
its address.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from evalrelay.bridge.errors import EvalrelayError

TOKEN_VARIABLE = "EVALRELAY_SERVE_TOKEN"
FILE_VARIABLE = f"{TOKEN_VARIABLE}_FILE"
COOKIE = "evalrelay_serve_token"
SHORTEST = 16
"""A token a guess cannot find: at least this many characters."""


def serve_token() -> str:
    """The token from the environment or its file; empty when neither is set."""
    path = os.environ.get(FILE_VARIABLE)
    if not path:
        return os.environ.get(TOKEN_VARIABLE, "")
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise EvalrelayError(
            f"{FILE_VARIABLE} names {path}, which cannot be read ({exc.strerror}); point it at "
            "the file holding serve's token"
        ) from None


def required_token(address: str) -> str:
    """The token for a server listening on `address` beyond loopback, or why it cannot."""
    token = serve_token()
    if len(token) < SHORTEST:
        said = "is shorter than 16 characters" if token else "is not set"
        raise EvalrelayError(
            f"serve would listen on {address}, beyond loopback, where anyone who reaches it "
            f"could read every result: its token {said}. Set {TOKEN_VARIABLE} (or "
            f"{FILE_VARIABLE}) to a long random string, e.g. `openssl rand -hex 24`, or "
            "leave --host at 127.0.0.1"
        )
    return token


class TokenGate:
    """Every HTTP request carries the token, or gets 401."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token.encode()
        # The browser keeps a value derived from the token, never the token itself.
        self.cookie = hmac.new(self.token, b"evalrelay serve cookie", hashlib.sha256).hexdigest()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"))
        offered = dict(query).get("token")
        if offered is not None and self._holds(offered) and scope["method"] == "GET":
            await self._remember(scope, query, send)
            return
        bearer = headers.get("authorization", "")
        cookie = SimpleCookie(headers.get("cookie", ""))
        held = bearer.startswith("Bearer ") and self._holds(bearer.removeprefix("Bearer "))
        if COOKIE in cookie and hmac.compare_digest(cookie[COOKIE].value, self.cookie):
            held = True
        if held:
            await self.app(scope, receive, send)
            return
        await _plain(send, 401, b"serve needs its token: send Authorization: Bearer TOKEN, "
                     b"or open this page once with ?token=TOKEN\n",
                     [(b"www-authenticate", b'Bearer realm="evalrelay serve"')])  # fmt: skip

    def _holds(self, given: str) -> bool:
        return hmac.compare_digest(given.encode(), self.token)

    async def _remember(self, scope: Scope, query: list[tuple[str, str]], send: Send) -> None:
        rest = urlencode([(k, v) for k, v in query if k != "token"])
        where = scope["path"] + (f"?{rest}" if rest else "")
        cookie = f"{COOKIE}={self.cookie}; Path=/; HttpOnly; SameSite=Strict"
        moved = [(b"location", where.encode()), (b"set-cookie", cookie.encode())]
        await _plain(send, 303, b"", moved)


async def _plain(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send({
        "type": "http.response.start", "status": status,
        "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                    (b"cache-control", b"no-store"), *headers],
    })  # fmt: skip
    await send({"type": "http.response.body", "body": body})

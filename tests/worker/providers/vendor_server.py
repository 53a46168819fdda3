"""A loopback HTTP server that speaks a vendor's endpoint with scripted replies.

It records each request (path, headers, JSON body, time) and answers from a script of
replies, the last one repeating. The vendors' real SDKs are pointed at it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any
    at: float


@dataclass
class Reply:
    body: Any
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    made: Callable[[Seen], tuple[Any, dict[str, str]]] | None = None
    """Body and headers made from the request (a server that echoes what it was sent)."""
    status_of: Callable[[Seen], int] | None = None
    """The status to answer the request with, in place of `status` (a server that fails
    some requests only)."""
    hold: Callable[[Seen], None] | None = None
    """Called before answering, outside the server's lock: a request kept waiting on
    something while the others are answered."""


class VendorServer:
    def __init__(self, replies: list[Reply]) -> None:
        self.replies = replies
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(length)
                with server.lock:
                    server.seen.append(
                        Seen(
                            self.path,
                            {k.lower(): v for k, v in self.headers.items()},
                            json.loads(raw or b"null"),
                            time.monotonic(),
                        )
                    )
                    reply = server.replies[min(len(server.seen), len(server.replies)) - 1]
                    body, headers = (
                        reply.made(server.seen[-1]) if reply.made else (reply.body, reply.headers)
                    )
                    status = reply.status_of(server.seen[-1]) if reply.status_of else reply.status
                    seen = server.seen[-1]
                if reply.hold:
                    reply.hold(seen)
                time.sleep(reply.delay)
                payload = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"


@contextmanager
def serving(*replies: Reply) -> Iterator[VendorServer]:
    server = VendorServer(list(replies))
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()


def openai_chat(text: str = "Paris", **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-test",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": text, **extra},
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
    }


def openai_responses(text: str = "Paris") -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "model": "gpt-test",
        "status": "completed",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
        "usage": {"input_tokens": 11, "output_tokens": 3, "total_tokens": 14},
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


def anthropic_message(text: str = "Paris") -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 11, "output_tokens": 3},
    }


def gemini_response(text: str = "Paris") -> dict[str, Any]:
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": text}]},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {"promptTokenCount": 11, "candidatesTokenCount": 3, "totalTokenCount": 14},
        "modelVersion": "gemini-test",
        "responseId": "resp-gem-1",
    }


def openai_chat_tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A Chat Completions reply that calls one function and says nothing."""
    function = {"name": name, "arguments": json.dumps(arguments)}
    reply = openai_chat("", tool_calls=[{"id": "call_1", "type": "function", "function": function}])
    reply["choices"][0]["message"]["content"] = None
    reply["choices"][0]["finish_reason"] = "tool_calls"
    return reply


def openai_responses_tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    reply = openai_responses()
    reply["output"] = [
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": name,
            "arguments": json.dumps(arguments),
            "status": "completed",
        }
    ]
    return reply


def anthropic_tool_use(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    reply = anthropic_message()
    reply["content"] = [{"type": "tool_use", "id": "toolu_1", "name": name, "input": arguments}]
    reply["stop_reason"] = "tool_use"
    return reply


def gemini_function_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    reply = gemini_response()
    reply["candidates"][0]["content"]["parts"] = [
        {"functionCall": {"id": "call_1", "name": name, "args": arguments}}
    ]
    return reply

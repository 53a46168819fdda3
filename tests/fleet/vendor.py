"""An OpenAI-compatible chat endpoint on a host of the fleet, counting what it is paid for.

Run as a script on a host (`Fleet`'s hosts run any command): `vendor.py IP PORT DELAY LOG`.
Each request's last user message (a case's question, unique per case) is appended to LOG
as it arrives, one line per call, before the answer is sent `DELAY` seconds later: the
test reads from LOG how many times each job's target was called, whatever the workers say.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ANSWER = {
    "id": "chatcmpl-fleet",
    "object": "chat.completion",
    "created": 1,
    "model": "fleet-model",
    "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
}


def question_of(body: Any) -> str:
    content = body["messages"][-1]["content"]
    if isinstance(content, list):
        content = " ".join(str(part.get("text", "")) for part in content)
    return " ".join(str(content).split())


def calls(log: Path) -> Counter[str]:
    """How many times each question was asked, as the endpoint logged it."""
    return Counter(log.read_text().splitlines()) if log.exists() else Counter()


def serve(ip: str, port: int, delay: float, log: Path) -> None:
    lock = threading.Lock()
    written = log.open("a")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
            with lock:
                written.write(question_of(body) + "\n")
                written.flush()
            time.sleep(delay)
            payload = json.dumps(ANSWER).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    class Server(ThreadingHTTPServer):
        request_queue_size = 128  # two workers open 18 connections at once: socketserver's
        # backlog of 5 lost one under a loaded CI run (an APIConnectionError, no call logged)

    server = Server((ip, port), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), Path(sys.argv[4]))

"""The model both promptfoo and evalrelay talk to in the parity test: a loopback server
speaking OpenAI's chat completions and embeddings, answering from what it is sent so
that both tools, sending the same request, get the same answer.

- A prompt holding `ANSWER: text` is answered `text`; any other prompt is echoed back.
- A prompt holding `GRADE[pass=true score=0.6]` is a grader's: it is answered in the
  form its grading prompt asks for (`graded`), `{"pass": true, "score": 0.6, "reason":
  ...}` for promptfoo's rubric prompt and evalrelay's judge alike (`score` left out when
  not written).
- A prompt holding `SLOW` is answered after `SLOW_SECONDS`, for the latency limits.
- Embeddings are letter counts (26 numbers per text) scaled to length 1, so a similarity
  or distance is a fixed function of the two texts.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.worker.providers.vendor_server import Reply, Seen, VendorServer, openai_chat, serving

SLOW_SECONDS = 0.4
GRADE = re.compile(r"GRADE\[pass=(true|false)(?: score=([0-9.]+))?\]")


def letter_counts(text: str) -> list[float]:
    """The text's letter counts scaled to length 1, as a real embedding model's vectors
    are: a dot product is then a cosine similarity, between 0 and 1."""
    counts = [0.0] * 26
    for char in text.lower():
        if "a" <= char <= "z":
            counts[ord(char) - ord("a")] += 1.0
    norm = math.sqrt(sum(c * c for c in counts))
    return [c / norm for c in counts] if norm else counts


def _text(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


def answer_for(seen: Seen) -> tuple[Any, dict[str, str]]:
    body = seen.body if isinstance(seen.body, dict) else {}
    if seen.path.endswith("/embeddings"):
        texts = body.get("input")
        texts = texts if isinstance(texts, list) else [texts]
        data = [
            {"object": "embedding", "index": i, "embedding": letter_counts(str(t))}
            for i, t in enumerate(texts)
        ]
        usage = {"prompt_tokens": 5, "total_tokens": 5}
        return {"object": "list", "data": data, "model": body.get("model"), "usage": usage}, {}
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    everything = "\n".join(_text(m.get("content")) for m in messages)
    grade = GRADE.search(everything)
    if grade:
        return openai_chat(graded(grade, everything)) | {"model": body.get("model")}, {}
    if "SLOW" in everything:
        time.sleep(SLOW_SECONDS)
    last = _text(messages[-1].get("content")) if messages else ""
    text = last.split("ANSWER:", 1)[1].strip() if "ANSWER:" in last else last
    return openai_chat(text) | {"model": body.get("model")}, {}


def graded(grade: re.Match[str], asked: str) -> str:
    """The grade in the form the grading prompt asks for: promptfoo's factuality
    category (A: consistent, D: contradicts), model-graded-closedqa's closing Y or N, else
    the `{pass, score, reason}` JSON promptfoo's rubric prompt and evalrelay's judge ask."""
    passed = grade.group(1) == "true"
    if '"pass"' in asked or "pass:" in asked:
        reply: dict[str, Any] = {"pass": passed}
        if grade.group(2):
            reply["score"] = float(grade.group(2))
        return json.dumps({**reply, "reason": "as the marker says"})
    if "category" in asked:
        return json.dumps({"category": "A" if passed else "D", "reason": "as the marker says"})
    return "As the marker says.\n" + ("Y" if passed else "N")


@contextmanager
def parity_model() -> Iterator[VendorServer]:
    with serving(Reply(body=None, made=answer_for)) as server:
        yield server

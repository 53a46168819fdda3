"""An OpenAI-compatible Chat Completions server that answers every request after a fixed
delay, on one asyncio event loop: thousands of open requests cost it nothing, so a
benchmark measures its client, not the server.

    python -m bench.slow_openai --port 8765 --delay 0.2

HTTP/1.1 with keep-alive, one JSON answer per request; enough for the OpenAI SDK.
"""

from __future__ import annotations

import argparse
import asyncio
import json

ANSWER = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1,
        "model": "bench",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
    }
).encode()
RESPONSE = (
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
    + f"content-length: {len(ANSWER)}\r\n\r\n".encode()
    + ANSWER
)


async def serve_connection(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float
) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            if length:
                await reader.readexactly(length)
            await asyncio.sleep(delay)
            writer.write(RESPONSE)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main(port: int, delay: float) -> None:
    server = await asyncio.start_server(
        lambda r, w: serve_connection(r, w, delay), "127.0.0.1", port, backlog=4096
    )
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--delay", type=float, default=0.2)
    args = parser.parse_args()
    asyncio.run(main(args.port, args.delay))

"""Texts that many results share (a system prompt, a question put to every target, an error
message), sent once in the HTML report and named by their number; and JSON that can sit
in a `<script>` element.
"""

from __future__ import annotations

import hashlib
import json

SHARED_KEY_CHARS = 64
"""Longer shared texts are remembered by a digest, not whole, while the page is written."""


def script_json(value: object) -> str:
    """JSON that cannot end its <script> element: every `<` is written `\\u003c`."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c")


class SharedTexts:
    """Numbers for texts that many results share, each text sent once: with the first
    batch that uses it (`take_new`)."""

    def __init__(self) -> None:
        self.numbers: dict[str | bytes, int] = {}
        self.new: list[str] = []
        self.old: set[int] = set()

    def __call__(self, text: str | None) -> int | None:
        if text is None:
            return None
        key: str | bytes = text
        if len(text) > SHARED_KEY_CHARS:
            key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        number = self.numbers.get(key)
        if number is None:
            number = self.numbers[key] = len(self.numbers)
            self.new.append(text)
        elif number < len(self.numbers) - len(self.new):
            self.old.add(number)
        return number

    @property
    def first_new(self) -> int:
        """The number of the first text `take_new` will return."""
        return len(self.numbers) - len(self.new)

    def take_new(self) -> list[str]:
        """The texts numbered since the last call, in the order of their numbers."""
        new, self.new = self.new, []
        return new

    def take_old(self) -> set[int]:
        """The texts of earlier batches used since the last call: a batch loaded on its own
        needs the batches that brought them."""
        old, self.old = self.old, set()
        return old

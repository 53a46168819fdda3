"""Masking the secrets a process holds out of every text it lets go of.

A vendor may echo a key back in any encoding (JSON `\\u002d` escapes, `%2D`, HTML
entities, base64 in a `Basic` header) or in part (a message cut short), and a process holds
more secrets than its provider's key: the Redis password, a database password, any
`*_TOKEN`. Replacing exact values misses all of that, so this module knows which secrets
the process holds and finds them, whole, in part or encoded, in any text: results, logs and
error messages all go through it.
"""

from __future__ import annotations

import base64
import functools
import logging
import os
import re
from bisect import bisect_right
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar, cast
from urllib.parse import parse_qsl, urlsplit

import ahocorasick
from pydantic import BaseModel

MASK = "***"

PIECE_CHARS = 8
"""The shortest piece of a secret masked wherever it shows; shorter secrets only whole."""

SHORTEST_SECRET = 4
"""Values shorter than this are not treated as secrets: masking them would hide words."""

BASE64_PIECE_CHARS = 10
"""Base64 of any `PIECE_CHARS` bytes holds this many characters that depend on them alone."""

SECRET_VARS_VARIABLE = "EVALRELAY_SECRET_VARS"
"""Comma-separated names of more variables whose values are secrets."""

SECRET_NAME_PARTS = frozenset(
    {
        "KEY", "KEYS", "APIKEY", "TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD",
        "PASSWORDS", "PASSWD", "PASS", "PASSPHRASE", "CREDENTIAL", "CREDENTIALS", "CREDS",
        "PAT", "AUTH", "AUTHORIZATION", "COOKIE",
    }
)  # fmt: skip
"""A variable whose name has one of these as a whole part (split on `_`) holds a secret."""

SECRET_QUERY_NAMES = re.compile(
    r"(?i)^(?:.*[_-])?(?:password|passwd|pass|pwd|secret|token|key|apikey|api_key|auth|"
    r"signature|sig|credential|credentials|access_token)$"
)
"""Query parameters of a URL whose value is a secret (`?password=`, `&access_token=`)."""

NOT_SECRETS = frozenset({"true", "false", "yes", "no", "none", "null", "on", "off"})

_NAME_PARTS = re.compile(r"[^A-Za-z0-9]+")


def looks_secret(name: str) -> bool:
    """Whether a variable of this name holds a secret, by the parts of its name."""
    return any(part.upper() in SECRET_NAME_PARTS for part in _NAME_PARTS.split(name))


def url_secrets(value: str) -> list[str]:
    """The password of a URL, from its userinfo or a secret-looking query parameter."""
    if "://" not in value:
        return []
    try:
        parts = urlsplit(value.strip())
        found = [parts.password] if parts.password else []
    except ValueError:
        return []
    found += [v for k, v in parse_qsl(parts.query) if v and SECRET_QUERY_NAMES.match(k)]
    return found


def held_secrets(
    names: Iterable[str] = (), environ: Mapping[str, str] | None = None
) -> frozenset[str]:
    """The secrets in this process's environment: variables with secret-looking names, the
    ones named in `names` and in `EVALRELAY_SECRET_VARS`, and passwords in URL values."""
    if environ is None and os.supports_bytes_environ:
        # The environment's bytes (CPython keeps them under `os.environ`, as `os.environb`
        # reads them) are the cache's key: decoding every variable on each call took a few
        # percent of an API worker's time (two calls per result).
        raw = cast(Any, os.environ)._data
        return _held_in_process(tuple(raw.items()), frozenset(names))
    environ = os.environ if environ is None else environ
    return _held(tuple(environ.items()), frozenset(names))


@functools.lru_cache(maxsize=32)
def _held_in_process(raw: tuple[tuple[bytes, bytes], ...], names: frozenset[str]) -> frozenset[str]:
    return _held(tuple((os.fsdecode(k), os.fsdecode(v)) for k, v in raw), names)


@functools.lru_cache(maxsize=32)
def _held(env: tuple[tuple[str, str], ...], names: frozenset[str]) -> frozenset[str]:
    values = dict(env)
    listed = {n.strip() for n in values.get(SECRET_VARS_VARIABLE, "").split(",") if n.strip()}
    found: set[str] = set()
    for name, value in values.items():
        if name in names or name in listed or looks_secret(name):
            found.add(value.strip())
        found.update(url_secrets(value))
    return frozenset(v for v in found if _is_secret(v))


def _is_secret(value: str) -> bool:
    """Not too short, not a yes/no word, not a path to a file (`GOOGLE_APPLICATION_CREDENTIALS`
    names a file; masking pieces of a path would hide every path in a log)."""
    if len(value) < SHORTEST_SECRET or value.lower() in NOT_SECRETS:
        return False
    return not (value.startswith(("/", "~", "./")) and os.path.exists(os.path.expanduser(value)))


def mask(text: str, names: Iterable[str] = ()) -> str:
    """`text` with every secret this process holds masked (see `held_secrets`)."""
    return detector(held_secrets(names)).mask(text)


T = TypeVar("T")


def masked(value: T, names: Iterable[str] = ()) -> T:
    """Every string inside `value` (dicts, lists, tuples, nested) masked, keys included."""
    return detector(held_secrets(names)).masked(value)


M = TypeVar("M", bound=BaseModel)


def masked_model(model: M, names: Iterable[str] = ()) -> M:
    """A copy of a pydantic model (a result) with every string in it masked; the model
    itself when none holds a secret."""
    return _masked_with_json(model, names)[0]


def masked_json(model: BaseModel, names: Iterable[str] = ()) -> str:
    """The JSON text of `masked_model(model)`."""
    return _masked_with_json(model, names)[1]


def _masked_with_json(model: M, names: Iterable[str]) -> tuple[M, str]:
    """Its JSON text is searched first, in one pass: a secret in any string of the model is
    in it too, whole or behind JSON's escapes (which the search undoes). Most results hold
    none, and are not taken apart."""
    found = detector(held_secrets(names))
    text = model.model_dump_json()
    if not found.spans(text):
        return model, text
    masked = type(model).model_validate(found.masked(model.model_dump()))
    return masked, masked.model_dump_json()


SEPARATORS = " \t\r\n\v\f\u00a0\u200b\u200c\u200d\u2060\ufeff-_.,:;|/\\'\"`"
"""Characters a copy of a secret may be split by (spaces, zero-width characters,
punctuation): the folded search looks through them."""

_FOLD = str.maketrans(
    {**{c: None for c in SEPARATORS}, **{chr(c): chr(c + 32) for c in range(65, 91)}}
)
"""Separators removed and ASCII letters lower-cased, in one pass that keeps every other
character where it was relative to the ones kept."""


_DROP = str.maketrans({c: None for c in SEPARATORS})

KEPT_CHUNK = 4096
"""Characters counted at a time (at C speed) when finding where a folded character was."""


def _folded(text: str) -> str:
    return text.translate(_FOLD)


class _Kept:
    """Where the n-th character kept by folding stands in the text: chunks' counts of kept
    characters, added up once, then a walk inside one chunk."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.before = [0]
        for start in range(0, len(text), KEPT_CHUNK):
            chunk = text[start : start + KEPT_CHUNK]
            self.before.append(self.before[-1] + len(chunk.translate(_DROP)))

    def where(self, n: int) -> int:
        chunk = bisect_right(self.before, n) - 1
        count = self.before[chunk]
        for at in range(chunk * KEPT_CHUNK, len(self.text)):
            if self.text[at] not in SEPARATORS:
                if count == n:
                    return at
                count += 1
        return len(self.text) - 1


class Detector:
    """Finds a fixed set of secrets in texts: whole, any piece of `PIECE_CHARS` or more,
    base64-encoded in any alignment, and behind JSON, URL and HTML escapes; and, for a
    secret of `PIECE_CHARS` or more, any piece of it, of it reversed or of its hex
    encoding, in any case and split by separators (`SEPARATORS`)."""

    def __init__(self, secrets: frozenset[str]) -> None:
        self.secrets = secrets
        self._words = _automaton({w for s in secrets for w in _words(s)})
        self._folded = _automaton({w for s in secrets for w in _folded_words(s)})
        self._escape = _escapes(secrets)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where secrets are in `text`: maximal, sorted, disjoint (start, end) spans."""
        if self._words is None or len(text) < SHORTEST_SECRET:
            return []
        found = self._found(text) + self._found_folded(text)
        layers: list[_Decoded] = []
        layer_text = text
        for _ in range(3):  # an escape inside an escape: `\\u002d`, `%255C`
            if not self._escape.search(layer_text):
                break
            layers.append(_Decoded(layer_text, self._escape))
            layer_text = layers[-1].text
            for start, end in self._found(layer_text):
                for layer in reversed(layers):
                    start, end = layer.original(start, end)
                found.append((start, end))
        return _merged(found)

    def mask(self, text: str) -> str:
        spans = self.spans(text)
        if not spans:
            return text
        pieces, last = [], 0
        for start, end in spans:
            pieces += [text[last:start], MASK]
            last = end
        pieces.append(text[last:])
        return "".join(pieces)

    def masked(self, value: T) -> T:
        if self._words is None:
            return value
        return self._masked(value)  # type: ignore[no-any-return]

    def _masked(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.mask(value)
        if isinstance(value, dict):
            return {self._masked(k): self._masked(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self._masked(v) for v in value)
        return value

    def _found(self, text: str) -> list[tuple[int, int]]:
        assert self._words is not None
        return [(end + 1 - length, end + 1) for end, length in self._words.iter(text)]

    def _found_folded(self, text: str) -> list[tuple[int, int]]:
        """Spans of `text` whose folded form holds a folded piece of a secret. The folding
        is one C-speed pass; where each kept character stood is worked out only when
        something is found, which is rare."""
        if self._folded is None:
            return []
        hits = list(self._folded.iter(_folded(text)))
        if not hits:
            return []
        kept = _Kept(text)
        return [(kept.where(end + 1 - length), kept.where(end) + 1) for end, length in hits]


@functools.lru_cache(maxsize=16)
def detector(secrets: frozenset[str]) -> Detector:
    """One detector per set of secrets, built once."""
    return Detector(secrets)


def _words(secret: str) -> set[str]:
    """The strings whose every occurrence is (part of) the secret."""
    if len(secret) < PIECE_CHARS:
        return {secret}
    words = _pieces(secret, PIECE_CHARS)
    raw = secret.encode()
    for align in range(3):  # where the secret starts in the base64 stream's 3-byte groups
        encoded = base64.b64encode(b"\0" * align + raw).decode()
        first, end = -(-8 * align // 6), (8 * align + 8 * len(raw)) // 6
        core = encoded[first:end]  # the characters that depend on the secret's bytes alone
        words |= _pieces(core, BASE64_PIECE_CHARS)
        words |= _pieces(core.replace("+", "-").replace("/", "_"), BASE64_PIECE_CHARS)
    return words


def _folded_words(secret: str) -> set[str]:
    """The folded pieces of a secret long enough to have pieces: of the secret, of it
    reversed, and of its bytes in hex (two digits a byte, so pieces twice as long)."""
    plain = _folded(secret)
    if len(secret) < PIECE_CHARS or len(plain) < PIECE_CHARS:
        return set()
    hexed = secret.encode().hex()
    return (
        _pieces(plain, PIECE_CHARS)
        | _pieces(plain[::-1], PIECE_CHARS)
        | _pieces(hexed, 2 * PIECE_CHARS)
    )


def _automaton(words: set[str]) -> ahocorasick.Automaton | None:
    if not words:
        return None
    automaton = ahocorasick.Automaton()
    for word in words:
        automaton.add_word(word, len(word))
    automaton.make_automaton()
    return automaton


def _pieces(text: str, size: int) -> set[str]:
    if len(text) <= size:
        return {text}
    return {text[i : i + size] for i in range(len(text) - size + 1)}


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(end, out[-1][1]))
        else:
            out.append((start, end))
    return out


def _escapes(secrets: frozenset[str]) -> re.Pattern[str]:
    """JSON `\\uXXXX`, `\\/` and `\\\\`, URL `%XX` and HTML `&#NN;` / `&#xHH;` escapes of
    printable ASCII characters and of any other character a secret holds. Other escapes are
    left alone: no secret runs across them, and a JSON text full of `\\u00e9` is searched
    as fast as a plain one."""
    others = sorted({c for s in secrets for c in s if not " " <= c <= "~"})
    hexes = "".join(f"|0*{_either_case(f'{ord(c):x}')}" for c in others)  # `\u00E9` too
    decimals = "".join(f"|0*{ord(c)}" for c in others)
    return re.compile(
        rf"\\u(?P<unicode>00[2-7][0-9A-Fa-f]{hexes})(?<=\\u....)|\\(?P<escaped>[\\/])"
        r"|%(?P<percent>[2-7][0-9A-Fa-f])"
        rf"|&#(?:(?P<decimal>0*(?:3[2-9]|[4-9][0-9]|1[01][0-9]|12[0-6]){decimals})"
        rf"|[xX](?P<hex>0*[2-7][0-9A-Fa-f]{hexes}));"
    )


def _either_case(hex_digits: str) -> str:
    """A pattern of these hex digits in upper or lower case, as encoders write either."""
    return "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in hex_digits)


class _Decoded:
    """A text with each escape replaced by its character, and the way back to where each
    character of the decoded text stood in the original."""

    def __init__(self, text: str, escape: re.Pattern[str]) -> None:
        pieces: list[str] = []
        self.at: list[int] = []  # where each decoded escape is in the decoded text
        self.start: list[int] = []  # and where it was in the original
        self.end: list[int] = []
        last = size = 0
        for match in escape.finditer(text):
            char = _character(match)
            if char is None:
                continue
            pieces.append(text[last : match.start()])
            size += match.start() - last
            pieces.append(char)
            self.at.append(size)
            self.start.append(match.start())
            self.end.append(match.end())
            size += 1
            last = match.end()
        pieces.append(text[last:])
        self.text = "".join(pieces)

    def original(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original text that decoded to `[start, end)`."""
        return self._where(start)[0], self._where(end - 1)[1]

    def _where(self, index: int) -> tuple[int, int]:
        k = bisect_right(self.at, index) - 1
        if k < 0:
            return index, index + 1
        if self.at[k] == index:
            return self.start[k], self.end[k]
        at = self.end[k] + index - self.at[k] - 1
        return at, at + 1


def _character(match: re.Match[str]) -> str | None:
    found = match.groupdict()
    if found["escaped"] is not None:
        return found["escaped"]
    code = int(found["decimal"] or found["unicode"] or found["percent"] or found["hex"], 16)
    if found["decimal"]:
        code = int(found["decimal"], 10)
    return chr(code) if code <= 0x10FFFF else None


class MaskingFilter(logging.Filter):
    """Masks a log record's message, arguments, traceback and stack in place."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        super().__init__()
        self.names = frozenset(names)

    def filter(self, record: logging.LogRecord) -> bool:
        found = detector(held_secrets(self.names))
        if found.secrets:
            try:
                message = record.getMessage()
            except Exception:  # a bad format string: still shown, still masked
                message = f"{record.msg!r} {record.args!r}"
            record.msg, record.args = found.mask(message), None
            if record.exc_info and not record.exc_text:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            if record.exc_text:
                record.exc_text = found.mask(record.exc_text)
            if record.stack_info:
                record.stack_info = found.mask(record.stack_info)
        return True


def mask_logs(names: Iterable[str] = ()) -> None:
    """Mask every log record this process makes from now on, whichever logger makes it and
    whichever handler (ours, Celery's, a library's) writes it: each record is masked as it
    is made. Safe to call again (the names add up)."""
    factory = logging.getLogRecordFactory()
    previous = getattr(factory, "unmasked", factory)
    known: frozenset[str] = getattr(factory, "names", frozenset())
    masking = MaskingFilter({*known, *names})

    def masked_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        masking.filter(record)
        return record

    masked_record.unmasked = previous  # type: ignore[attr-defined]
    masked_record.names = masking.names  # type: ignore[attr-defined]
    logging.setLogRecordFactory(masked_record)

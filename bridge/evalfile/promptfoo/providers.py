"""A promptfoo config's providers, spelled out: `{id: …}` mappings whether written as an
id, as `{openai:gpt-4o: {config}}`, or in a `file://providers.yaml` of their own; and the
name each one has as an evalrelay target (its `label`, else its `id`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalrelay.bridge.evalfile.yaml_source import load_yaml


def spelled_out(entry: Any) -> Any:
    """`{openai:gpt-4o: {config: ...}}` as `{id: openai:gpt-4o, config: ...}`; an id as
    `{id: ...}`; anything else as it is (the loader reports it)."""
    if isinstance(entry, str):
        return {"id": entry}
    if isinstance(entry, dict) and len(entry) == 1 and "id" not in entry:
        ((name, options),) = entry.items()
        return {"id": name, **(options if isinstance(options, dict) else {})}
    return entry


def provider_entries(raw: Any, folder: Path, root: Path) -> list[Any]:
    """Every provider, a `file://*.yaml` or `.json` reference replaced by the providers it
    holds (a file outside the project `root`, or missing, stays a reference)."""
    entries = raw if isinstance(raw, list) else ([raw] if raw is not None else [])
    out: list[Any] = []
    for entry in entries:
        if isinstance(entry, str) and entry.startswith("file://"):
            path = (folder / entry.removeprefix("file://")).resolve()
            readable = path.suffix in (".yaml", ".yml", ".json") and path.is_file()
            if readable and path.is_relative_to(root):
                held = load_yaml(path).data
                out += [spelled_out(e) for e in (held if isinstance(held, list) else [held])]
                continue
        out.append(spelled_out(entry))
    return out


def target_name(entry: Any) -> Any:
    """The target a provider runs on: its label, else its id."""
    entry = spelled_out(entry)
    if isinstance(entry, dict):
        return entry.get("label") if isinstance(entry.get("label"), str) else entry.get("id")
    return entry


DEFAULT_EMBEDDING = "openai:embedding:text-embedding-3-large"
"""promptfoo's embedding provider when a config names none."""


def by_kind(entry: Any, kind: str) -> Any:
    """From promptfoo's `{text: ..., embedding: ...}` provider map, the one for `kind`;
    a single provider serves text, and embeddings when its id is an embedding model's."""
    if (
        isinstance(entry, dict)
        and "id" not in entry
        and any(k in entry for k in ("text", "embedding", "classification"))
    ):
        return entry.get(kind)
    if kind == "embedding":
        spelled = spelled_out(entry)
        named = spelled.get("id") if isinstance(spelled, dict) else None
        return entry if isinstance(named, str) and ":embedding" in named else None
    return entry


def embedding_name(entry: Any) -> str:
    """The target that embeds for `similar`: the provider map's `embedding`, else
    promptfoo's default."""
    found = target_name(by_kind(entry, "embedding"))
    return found if isinstance(found, str) else DEFAULT_EMBEDDING

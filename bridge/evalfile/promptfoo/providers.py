"""A promptfoo config's providers, spelled out: `{id: …}` mappings whether written as an
id, as `{openai:gpt-4o: {config}}`, or in a `file://providers.yaml` of their own; and the
name each one has as an evalrelay target (its `label`, else its `id`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bridge.evalfile.yaml_source import load_yaml


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

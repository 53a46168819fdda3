"""AgentV's `providers.yaml` catalog (its July 2026 format) as a targets file.

Each entry is `{id: <provider kind>, label: <name>, ...settings}`, settings sometimes
under `config:`, values written `{{ env.VAR }}`. It is rewritten into the `targets:` list
evalrelay reads, with a map back to the lines as written, so an error in it still points
at the key the author wrote.
"""

from __future__ import annotations

import re
from typing import Any

from evalrelay.bridge.evalfile.yaml_source import Loc, YamlDocument

CATALOG_NAMES = ("providers.yaml", "providers.yml")

KINDS = {
    "claude": "claude-code",
    "claude-cli": "claude-code",
    "openrouter": "openai-compatible",
}
"""AgentV's provider ids that are another name for a kind evalrelay runs."""
BASE_URLS = {"openrouter": "https://openrouter.ai/api/v1"}

KEYS = {
    "grader_target": "judge_target",
    "api_format": "api",
    "providerBatching": "provider_batching",
    "stream_log": None,
}
"""AgentV's setting names that evalrelay spells otherwise. None: not read. `stream_log` is
how AgentV echoes an agent's log to its console; evalrelay keeps that log in the job's
workspace whatever it says."""

ENV_TEMPLATE = re.compile(r"\{\{\s*env\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def is_catalog(doc: YamlDocument) -> bool:
    return doc.path.name in CATALOG_NAMES and not (
        isinstance(doc.data, dict) and "targets" in doc.data
    )


def catalog_as_targets(doc: YamlDocument) -> YamlDocument:
    """The catalog as `{targets: [...]}`; what cannot be read is left for validation to
    report (an entry that is no mapping, a missing `id`)."""
    data = doc.data
    base: Loc = ("providers",) if isinstance(data, dict) else ()
    entries = data.get("providers") if isinstance(data, dict) else data
    origin: dict[Loc, Loc] = {("targets",): base}
    targets: list[Any] = []
    for i, entry in enumerate(entries if isinstance(entries, list) else []):
        if not isinstance(entry, dict):
            targets.append(entry)
            continue
        targets.append(_target(entry, (*base, i), ("targets", i), origin))
    out: dict[str, Any] = {"targets": targets}
    if isinstance(data, dict) and "$schema" in data:
        out["$schema"] = data["$schema"]
        origin[("$schema",)] = ("$schema",)
    return doc._replace(data=out, origin=origin)


def _target(entry: dict[str, Any], written: Loc, loc: Loc, origin: dict[Loc, Loc]) -> Any:
    kind = entry.get("id")
    config = entry.get("config")
    nested: dict[str, Any] = config if isinstance(config, dict) else {}
    settings: dict[str, Any] = {}
    places: dict[str, Loc] = {
        "name": (*written, "label" if "label" in entry else "id"),
        "provider": (*written, "id"),
    }
    for key, value in nested.items():
        settings[key] = value
        places[_renamed(key)] = (*written, "config", key)
    for key, value in entry.items():
        if key in ("id", "label", "runtime") or (key == "config" and nested):
            continue
        settings[key] = value
        places[_renamed(key)] = (*written, key)
    target: dict[str, Any] = {
        "name": entry.get("label", kind),
        "provider": KINDS.get(kind, kind) if isinstance(kind, str) else kind,
    }
    if isinstance(kind, str) and kind in BASE_URLS:
        target["base_url"] = BASE_URLS[kind]
    runtime = entry.get("runtime", "host")
    if runtime != "host":  # AgentV's docker runtime: a kind evalrelay cannot run
        target["provider"] = f"{kind} (runtime: {runtime})"
    for key, value in settings.items():
        if KEYS.get(key, key) is not None:
            target[_renamed(key)] = _env_references(value)
    # Validation errors name a place with the union's tag (the kind) in it, or without.
    for prefix in (loc, (*loc, str(target["provider"]))):
        origin[prefix] = written
        origin.update({(*prefix, key): place for key, place in places.items()})
    return target


def _renamed(key: str) -> str:
    return KEYS.get(key) or key


def _env_references(value: Any) -> Any:
    """`{{ env.VAR }}` as evalrelay's `${VAR}`: read where the target runs, never here."""
    if isinstance(value, str):
        return ENV_TEMPLATE.sub(lambda m: "${" + m.group(1) + "}", value)
    if isinstance(value, list):
        return [_env_references(v) for v in value]
    if isinstance(value, dict):
        return {k: _env_references(v) for k, v in value.items()}
    return value

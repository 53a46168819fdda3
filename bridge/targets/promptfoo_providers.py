"""promptfoo provider ids (`openai:chat:gpt-4o-mini`, `anthropic:messages:…`, `echo`) as
evalrelay targets, so a promptfoo config runs without a targets file.

A target of the same name in the project's targets file wins: that is where a provider
evalrelay cannot derive (`http`, `exec:`, `python:` files) is defined. Keys never travel
from the config: promptfoo's `apiKey` is ignored, `apiKeyEnvar` names the variable the
worker reads, as `api_key` does in a targets file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from evalrelay.bridge.evalfile.promptfoo.detect import is_promptfoo
from evalrelay.bridge.evalfile.promptfoo.providers import (
    DEFAULT_EMBEDDING,
    by_kind,
    provider_entries,
    spelled_out,
    target_name,
)
from evalrelay.bridge.evalfile.yaml_source import load_yaml

OPENAI_COMPATIBLE = {
    "openrouter": ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "ollama": ("http://localhost:11434/v1", None),
    "groq": ("https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "deepseek": ("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "mistral": ("https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    "togetherai": ("https://api.together.xyz/v1", "TOGETHER_API_KEY"),
}
"""Vendors promptfoo reaches through their OpenAI-compatible endpoints."""
MODES = ("chat", "completion", "messages", "responses")
SAMPLING_DEFAULTS = {"max_tokens": 1024, "temperature": 0}
"""What promptfoo's OpenAI-style and Anthropic providers send when the config sets
neither (its OPENAI_/ANTHROPIC_MAX_TOKENS and _TEMPERATURE variables are not read)."""
SAMPLED = ("openai", "anthropic", "azure", "azureopenai", *OPENAI_COMPATIBLE)
REASONING = re.compile(r"^(o\d|gpt-5|codex)", re.IGNORECASE)
"""Reasoning models, to which promptfoo sends neither default."""


def target_for(provider_id: str, config: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The targets-file entry for one promptfoo provider, or None when its id is not one
    evalrelay derives (the targets file must define `name` then)."""
    vendor, _, rest = provider_id.partition(":")
    mode, _, model = rest.partition(":")
    base_url = config.get("apiBaseUrl") or config.get("baseUrl") or config.get("baseURL")
    if mode in ("embedding", "embeddings") and model and vendor in ("openai", *OPENAI_COMPATIBLE):
        return _embedder(vendor, model, base_url, config, name)
    if mode not in MODES or not model:
        model = rest
        mode = "chat"
    if isinstance(config.get("apiHost"), str) and not base_url:
        base_url = f"https://{config['apiHost']}/v1"
    common: dict[str, Any] = {"name": name}
    if isinstance(config.get("temperature"), (int, float)):
        common["temperature"] = config["temperature"]
    if isinstance(config.get("max_tokens"), int):
        common["max_tokens"] = config["max_tokens"]
    if isinstance(config.get("apiKeyEnvar"), str):
        common["api_key"] = "${" + config["apiKeyEnvar"] + "}"
    if provider_id == "echo":
        return {"name": name, "provider": "mock", "echo": True}
    if vendor in SAMPLED and not REASONING.match(model):
        common = {**SAMPLING_DEFAULTS, **common}
    if vendor == "openai" and model:
        api = "responses" if mode == "responses" else "chat"
        if api == "chat" and "max_tokens" in common:  # promptfoo's name for it, not
            common["extra_body"] = {"max_tokens": common.pop("max_tokens")}  # OpenAI's newer
        return {"provider": "openai", "model": model, "api": api, **common} | (
            {"base_url": base_url} if base_url else {}
        )
    if vendor == "anthropic" and model:
        return {"provider": "anthropic", "model": model, **common}
    if vendor in ("azure", "azureopenai") and model:
        endpoint = config.get("apiHost") or "${AZURE_OPENAI_ENDPOINT}"
        endpoint = endpoint if "://" in endpoint else f"https://{endpoint}"
        return {"provider": "azure", "endpoint": endpoint, "deployment": model, **common}
    if vendor in ("google", "vertex", "gemini") and model:
        return {"provider": "gemini", "model": model, **common}
    if vendor in OPENAI_COMPATIBLE and model:
        url, key = OPENAI_COMPATIBLE[vendor]
        keyed = {"api_key": "${" + key + "}"} if key and "api_key" not in common else {}
        return {
            "provider": "openai-compatible",
            "model": model,
            "base_url": base_url or url,
            **keyed,
            **common,
        }
    return None


def _embedder(
    vendor: str, model: str, base_url: Any, config: dict[str, Any], name: str
) -> dict[str, Any]:
    """An embedding provider (`openai:embedding:<model>`) as the target `similar` asks."""
    target: dict[str, Any] = {"name": name, "model": model}
    if isinstance(config.get("apiKeyEnvar"), str):
        target["api_key"] = "${" + config["apiKeyEnvar"] + "}"
    if vendor == "openai":
        return {**target, "provider": "openai"} | ({"base_url": base_url} if base_url else {})
    url, key = OPENAI_COMPATIBLE[vendor]
    keyed = {"api_key": "${" + key + "}"} if key and "api_key" not in target else {}
    return {**target, **keyed, "provider": "openai-compatible", "base_url": base_url or url}


def config_targets(path: Path, root: Path) -> dict[str, dict[str, Any]]:
    """Targets for the providers (and grading providers) of the promptfoo config at
    `path`, by the name the loader gives each: its `label`, else its `id`."""
    try:
        # Neither named nor marked as promptfoo's: not read again (a big suite took seconds).
        if not path.name.lower().startswith("promptfooconfig") and (
            b"promptfoo" not in path.read_bytes()
        ):
            return {}
        data = load_yaml(path).data
    except Exception:  # the loader reports a broken file; here it just brings no targets
        return {}
    if not is_promptfoo(path, data):
        return {}
    found: dict[str, dict[str, Any]] = {}
    for entry in _provider_entries(data, path.parent, root):
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            continue
        name = target_name(entry)
        config: dict[str, Any] = entry["config"] if isinstance(entry.get("config"), dict) else {}
        target = target_for(entry["id"], config, name)
        if target is not None:
            found.setdefault(name, target)
    return found


def _provider_entries(data: dict[str, Any], folder: Path, root: Path) -> list[Any]:
    graders: list[Any] = []
    default = data.get("defaultTest")
    if isinstance(default, dict) and isinstance(default.get("options"), dict):
        graders.append(default["options"].get("provider"))
    tests = data.get("tests")
    for test in tests if isinstance(tests, list) else []:
        if isinstance(test, dict):
            graders.append((test.get("options") or {}).get("provider"))
            graders += [a.get("provider") for a in test.get("assert") or [] if isinstance(a, dict)]
    kinds = [by_kind(g, kind) for g in graders for kind in ("text", "embedding")]
    if "similar" in json.dumps(data, default=str):  # promptfoo's default embedder, if used
        kinds.append(DEFAULT_EMBEDDING)
    raw = data.get("providers", data.get("targets"))
    return provider_entries(raw, folder, root) + [spelled_out(g) for g in kinds if g]

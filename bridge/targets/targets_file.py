"""Finding, validating and looking up targets (`targets.yaml`).

A target is validated when the file loads, but environment variables are read only when
a target is used: a missing `${VAR}` is an error for the target that needs it, never for
the others. Keys (`api_key`) are never read on the submitting side at all.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalrelay.bridge.errors import Diagnostic, InvalidFileError, TargetError
from evalrelay.bridge.evalfile.project import root_reason, searched_folders
from evalrelay.bridge.evalfile.validation import describe, validate_document
from evalrelay.bridge.evalfile.yaml_source import YamlDocument, load_yaml
from evalrelay.bridge.targets.interpolation import OneTarget, interpolate, references
from evalrelay.bridge.targets.promptfoo_providers import config_targets, target_for
from evalrelay.bridge.targets.providers_catalog import catalog_as_targets, is_catalog
from evalrelay.bridge.targets.settings import QUEUE_FOR_KIND, TargetSettings

TARGET_FILES = (
    "targets.yaml",
    "targets.yml",
    ".evalrelay/targets.yaml",
    ".evalrelay/targets.yml",
    ".agentv/targets.yaml",
    ".agentv/targets.yml",
    "providers.yaml",
    "providers.yml",
    ".agentv/providers.yaml",
    ".agentv/providers.yml",
)
"""The names of a targets file, first match wins in each folder (see `find_targets_file`).
`providers.yaml` is AgentV's later catalog, read as a targets file."""

MOCK_JUDGE = "mock-judge"
BUILTIN_TARGETS: dict[str, dict[str, Any]] = {
    "mock": {"name": "mock", "provider": "mock"},
    MOCK_JUDGE: {"name": MOCK_JUDGE, "provider": "mock", "judge": True},
    "oracle": {"name": "oracle", "provider": "oracle"},
    "nop": {"name": "nop", "provider": "nop"},
}
"""Targets that exist in every project unless its targets file defines the same name.
`mock-judge` grades the judge evaluators of cases run on a mock target (everything passes),
so a dry run goes through every step. `oracle` and `nop` are Harbor's agents of the same
names, for container tasks."""


class TargetsFile(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_: str | None = Field(default=None, alias="$schema")
    targets: list[TargetSettings]


class Target(NamedTuple):
    """One target as written, with `${VAR}` references intact."""

    name: str
    kind: str
    raw: dict[str, Any]

    @property
    def queue(self) -> str:
        return QUEUE_FOR_KIND[self.kind]

    def settings(self, env: Mapping[str, str] | None = None) -> TargetSettings:
        """The validated settings, with variables read from `env` (default: this process)."""
        env = os.environ if env is None else env
        missing = sorted(set(references(self.raw)) - set(env))
        if missing:
            raise TargetError(
                f"target '{self.name}' needs environment variable(s) "
                f"{', '.join(missing)}; set them where this target runs"
            )
        try:
            return OneTarget.model_validate({"target": interpolate(self.raw, env)}).target
        except ValidationError as exc:
            errors = "; ".join(
                describe(OneTarget, e).removeprefix("target.")
                for e in exc.errors(include_url=False)
            )
            raise TargetError(f"target '{self.name}': {errors}") from None


class Targets:
    def __init__(
        self,
        targets: dict[str, Target],
        path: Path | None = None,
        searched: tuple[Path, ...] = (),
        derive: bool = True,
    ) -> None:
        self.by_name = {**{n: _target(raw) for n, raw in BUILTIN_TARGETS.items()}, **targets}
        self.path = path
        self.searched = searched
        self.derive = derive
        """Whether a promptfoo provider id names a target of its own; not for an untrusted
        file, which runs on the operator's targets only."""

    @classmethod
    def load(
        cls,
        project_root: Path,
        near: Path | None = None,
        eval_file: Path | None = None,
        *,
        derive: bool = True,
    ) -> Targets:
        """The targets file nearest to `near` (an eval file or folder), up to the root.
        A promptfoo config (`eval_file`, else `near`) adds targets for its provider ids;
        the targets file's own win. `derive=False`: the targets file's only."""
        path = find_targets_file(project_root, near)
        config = eval_file or near
        derived = {
            name: _target(raw)
            for name, raw in (
                config_targets(config, project_root) if derive and config and config.is_file()
                else {}
            ).items()
        }  # fmt: skip
        if path is None:
            searched = tuple(searched_folders(project_root, near))
            return cls(derived, searched=searched, derive=derive)
        return cls({**derived, **load_targets_file(path)}, path, derive=derive)

    def get(self, name: str) -> Target:
        """The target, or a TargetError saying why it cannot be used here."""
        if self.derive and name not in self.by_name:  # a promptfoo id: `openai:chat:gpt-4o-mini`
            derived = target_for(name, {}, name)
            if derived is not None:
                self.by_name[name] = _target(derived)
        try:
            target = self.by_name[name]
        except KeyError:
            where = f" in {self.path}" if self.path else f" ({self._not_found()})"
            raise TargetError(
                f"unknown target '{name}'{where}; available: {', '.join(sorted(self.by_name))}"
            ) from None
        if target.kind not in QUEUE_FOR_KIND:
            raise TargetError(
                f"target '{name}' uses provider '{target.kind}', which evalrelay cannot run "
                f"(in {self.path}); it runs: {', '.join(sorted(QUEUE_FOR_KIND))}"
            )
        return target

    def _not_found(self) -> str:
        """Where targets files were looked for, and why no higher: the search stops at the
        project root, the last folder searched."""
        folders = ", ".join(str(f) for f in self.searched) or "the project root"
        found = f"no targets file found; looked for {', '.join(TARGET_FILES)} in {folders}"
        return f"{found}; {root_reason(self.searched[-1])}" if self.searched else found


def find_targets_file(project_root: Path, near: Path | None = None) -> Path | None:
    """The nearest targets file, from `near` up to the project root."""
    for folder in searched_folders(project_root, near):
        for name in TARGET_FILES:
            if (folder / name).is_file():
                return folder / name
    return None


def load_targets_file(path: Path) -> dict[str, Target]:
    """Validate the whole file as if every variable were set; unset ones fail only on use.

    A target of a provider kind evalrelay cannot run (AgentV has more) is kept aside: the
    file loads, and only a case that uses that target gets an error.
    """
    doc = load_yaml(path)
    if is_catalog(doc):
        doc = catalog_as_targets(doc)
    problems = _duplicate_names(doc)
    data = interpolate(doc.data, _AnyEnv())
    foreign = _foreign_kinds(data)
    if foreign:
        data = {**data, "targets": [
            {"name": raw["name"], "provider": "mock"} if i in foreign else raw
            for i, raw in enumerate(data["targets"])
        ]}  # fmt: skip
    try:
        validate_document(TargetsFile, doc._replace(data=data))
    except InvalidFileError as exc:
        problems += exc.diagnostics
    if problems:
        raise InvalidFileError(sorted(problems, key=lambda d: (d.line, d.column)))
    return {
        raw["name"]: Target(raw["name"], foreign[i], raw) if i in foreign else _target(raw)
        for i, raw in enumerate(doc.data["targets"])
    }


def _foreign_kinds(data: Any) -> dict[int, str]:
    """Entries (by index) whose `provider` is a kind evalrelay does not know."""
    entries = data.get("targets") if isinstance(data, dict) else None
    return {
        i: raw["provider"]
        for i, raw in enumerate(entries if isinstance(entries, list) else [])
        if isinstance(raw, dict)
        and isinstance(raw.get("name"), str)
        and isinstance(raw.get("provider"), str)
        and raw["provider"] not in QUEUE_FOR_KIND
    }


def _duplicate_names(doc: YamlDocument) -> list[Diagnostic]:
    entries = doc.data.get("targets") if isinstance(doc.data, dict) else None
    seen: set[str] = set()
    problems = []
    for index, raw in enumerate(entries if isinstance(entries, list) else []):
        name = raw.get("name") if isinstance(raw, dict) else None
        if isinstance(name, str) and name in seen:
            problems.append(
                doc.diagnostic(
                    ("targets", index, "name"),
                    f"duplicate target name '{name}'; names must be unique",
                )
            )
        seen.add(str(name))
    return problems


def _target(raw: dict[str, Any]) -> Target:
    kind = OneTarget.model_validate({"target": interpolate(raw, _AnyEnv())}).target.provider
    return Target(raw["name"], kind, raw)


class _AnyEnv(dict[str, str]):
    """An environment in which every variable is set, to check shapes before values are known."""

    def __contains__(self, key: object) -> bool:
        return True

    def __missing__(self, key: str) -> str:
        return "1"

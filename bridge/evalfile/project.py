"""Where a project begins, and what its `evalrelay.yaml` says.

The project root bounds everything an eval file may read: attached files resolve inside
it, and `/`-rooted paths start from it. It is the nearest folder, upwards from the eval
file, holding `evalrelay.yaml` or `.git`.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any

from pathspec import PathSpec
from pydantic import BaseModel, ConfigDict, Field, PositiveInt

from evalrelay.bridge.evalfile.limits import LoadLimits, TemplateLimits
from evalrelay.bridge.evalfile.untrusted import Untrusted
from evalrelay.bridge.evalfile.validation import validate_document
from evalrelay.bridge.evalfile.yaml_source import YamlDocument, load_yaml

CONFIG_NAME = "evalrelay.yaml"
AGENTV_CONFIG = Path(".agentv") / "config.yaml"
ROOT_MARKERS = (CONFIG_NAME, ".git")

DEFAULT_MAX_FILE_BYTES = 1024 * 1024
"""Attached files larger than this are refused unless the project raises the limit."""


class ProjectConfig(BaseModel):
    """`evalrelay.yaml` at the project root."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    guideline_patterns: list[str] = Field(default_factory=list)
    """gitignore-style patterns (project-relative) naming the files that are guidelines."""
    default_target: str | None = None
    """Target used when neither the command line nor the eval file names one."""
    default_judge: str | None = None
    """Judge of the judging evaluators of targets with no `judge_target`."""
    max_file_bytes: PositiveInt = DEFAULT_MAX_FILE_BYTES
    results_dir: str = "results"
    pass_threshold: float = Field(default=0.8, ge=0.0, le=1.0)
    """The score at which a case passes, unless its file or the case sets `threshold`."""
    template_env: list[str] = Field(default_factory=list)
    """The environment variables templates may read as `{{ env.NAME }}`; no other."""
    template_limits: TemplateLimits = TemplateLimits()
    load_limits: LoadLimits = LoadLimits()


class AgentvDefaults(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    provider: str | None = None
    grader: str | None = None


class AgentvConfig(BaseModel):
    """AgentV's `.agentv/config.yaml`: its `guideline_patterns`, and `defaults` (the
    provider a suite without one runs on, and the grader of its judging assertions). The
    rest is about AgentV's own runner."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    guideline_patterns: list[str] = Field(default_factory=list)
    defaults: AgentvDefaults | None = None


class Project:
    """A project root with its configuration, loaded once."""

    def __init__(
        self,
        root: Path,
        config: ProjectConfig | None = None,
        near: Path | None = None,
        configured_at: Path | None = None,
        untrusted: Untrusted | None = None,
    ) -> None:
        self.root = root.resolve()
        self.config = config if config is not None else load_config(self.root, near)
        self.configured_at = configured_at
        """Where every eval file of this project looks for its targets file, instead of
        from its own folder: a watcher's inbox is configured from outside it."""
        self.untrusted = untrusted
        """Set for files from the inbox: what they may hold (`bridge.evalfile.untrusted`).
        None: the operator's own files, trusted as the operator is."""

    @classmethod
    def containing(cls, path: Path) -> Project:
        """The project of an eval file (or folder), with the configuration nearest to it."""
        return cls(find_root(path), near=path)

    @property
    def files_root(self) -> Path:
        """The folder every file an eval file reads must lie in: the project, or for an
        untrusted file its inbox (the operator's targets and results are beside it)."""
        return self.untrusted.inbox.resolve() if self.untrusted else self.root

    def outside(self, what: str, real: Path) -> str:
        """Why `what`, found at `real`, may not be read."""
        if self.untrusted:
            return (
                f"{what} resolves to {real}, outside the inbox {self.files_root}; files "
                "dropped in the inbox may read only files inside it"
            )
        return (
            f"{what} resolves to {real}, outside the project root {self.root}; it must "
            "live inside the project"
        )

    @property
    def results_dir(self) -> Path:
        """Where `run` writes results unless told otherwise."""
        return self.root / self.config.results_dir

    def __getstate__(self) -> dict[str, Any]:
        """Without the compiled patterns, which may not pickle (pathspec's re2 backend): a
        project travels to and from the process that loads a watcher's files."""
        return {k: v for k, v in self.__dict__.items() if k != "guideline_spec"}

    @cached_property
    def guideline_spec(self) -> PathSpec[Any]:
        return PathSpec.from_lines("gitignore", self.config.guideline_patterns)

    def is_guideline(self, project_path: str) -> bool:
        """Whether a project-relative POSIX path matches `guideline_patterns`."""
        return self.guideline_spec.match_file(project_path)


def find_root(path: Path) -> Path:
    """The nearest folder at or above `path` holding a root marker; else `path`'s own folder."""
    start = path.resolve()
    if not start.is_dir():
        start = start.parent
    for folder in (start, *start.parents):
        if any((folder / marker).exists() for marker in ROOT_MARKERS):
            return folder
    return start


def root_reason(root: Path) -> str:
    """Why `root` is the project root, in words: nothing above it is searched, so a message
    about what was not found must say where the search stopped, and why."""
    markers = [marker for marker in ROOT_MARKERS if (root / marker).exists()]
    if markers:
        return (
            f"the project root is {root}, the nearest folder holding {' and '.join(markers)}; "
            "folders above it are not searched"
        )
    return (
        f"the project root is {root}, where the search began, as no folder above it holds "
        f"{' or '.join(ROOT_MARKERS)}; create {CONFIG_NAME} (it may be empty) in a higher "
        "folder to make that the root and search up to it"
    )


def load_config(root: Path, near: Path | None = None) -> ProjectConfig:
    """`evalrelay.yaml` at the root; else, as AgentV looks, the `.agentv/config.yaml`
    nearest to `near` (an eval file), up to the root."""
    config_path = root / CONFIG_NAME
    if config_path.is_file():
        doc = load_yaml(config_path)
        if doc.data is None:
            return ProjectConfig()
        return validate_document(ProjectConfig, doc)
    for folder in searched_folders(root, near):
        agentv_path = folder / AGENTV_CONFIG
        if agentv_path.is_file():
            doc = _defaults_inlined(load_yaml(agentv_path), root)
            if not doc.data:
                return ProjectConfig()
            agentv = validate_document(AgentvConfig, doc)
            defaults = agentv.defaults or AgentvDefaults()
            return ProjectConfig(
                guideline_patterns=agentv.guideline_patterns,
                default_target=defaults.provider,
                default_judge=defaults.grader,
            )
    return ProjectConfig()


def _defaults_inlined(doc: YamlDocument, root: Path) -> YamlDocument:
    """AgentV may keep `defaults` in a file of its own (`defaults: file://defaults.yaml`,
    beside the config); read it, when it is inside the project."""
    data = doc.data
    reference = data.get("defaults") if isinstance(data, dict) else None
    if not (isinstance(reference, str) and reference.startswith("file://")):
        return doc
    path = (doc.path.parent / reference.removeprefix("file://")).resolve()
    if not path.is_relative_to(root.resolve()) or not path.is_file():
        return doc  # validation then says `defaults` must be a mapping, at its line
    return doc._replace(data={**data, "defaults": load_yaml(path).data})


def searched_folders(project_root: Path, near: Path | None = None) -> list[Path]:
    """The folders from `near` up to the project root, nearest first, as AgentV looks."""
    root = project_root.resolve()
    start = (near or root).resolve()
    if not start.is_dir():
        start = start.parent
    if not start.is_relative_to(root):
        return [root]
    return [start, *(p for p in start.parents if p.is_relative_to(root))]

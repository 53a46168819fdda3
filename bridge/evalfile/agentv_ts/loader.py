"""Reading a TypeScript eval file: the module runs in the code box as promptfoo's
functions do (`bridge.evalfile.promptfoo.functions`), through npm's `tsx`, and says its
default export as JSON, lowered to the YAML suite's keys as AgentV's loader lowers it
(`read_eval.js`). `import ... from 'agentv'` resolves to the package installed beside
the file, else to `agentv_sdk.cjs`, whose helpers return what AgentV's own return.

The file is code: a file dropped in the inbox is read only when the watcher runs with
`--allow-code`, boxed as always; what it exports is then held to the allow-list as the
YAML suite is."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

from evalrelay.bridge.errors import Diagnostic, InvalidFileError
from evalrelay.bridge.evalfile.limits import how_to_raise
from evalrelay.bridge.evalfile.project import Project
from evalrelay.bridge.evalfile.promptfoo.functions import FunctionError, node_argv, run_boxed
from evalrelay.bridge.evalfile.untrusted import RUNS_CODE
from evalrelay.bridge.evalfile.yaml_source import YamlDocument

HERE = Path(__file__).parent
SDK = HERE / "agentv_sdk.cjs"
READ_EVAL = HERE / "read_eval.js"
SUFFIXES = (".eval.ts", ".eval.mts", ".eval.js", ".eval.mjs")
FORMAT = "AgentV TypeScript suite (default export: tests, prompts, assert)"


def is_typescript_eval(path: Path) -> bool:
    """Whether the file is a TypeScript (or JavaScript) eval file, by its name, as AgentV
    tells them (`suite.eval.ts`, never `promptfooconfig.ts` or a helper module)."""
    return path.name.lower().endswith(SUFFIXES) and len(path.name) > len(".eval.mjs")


def load_typescript_eval(path: Path, project: Project) -> YamlDocument:
    """The file's default export as a suite document (no places in it: its errors point at
    the file's first line), or InvalidFileError saying what is wrong and what to do."""
    if project.untrusted and not project.untrusted.allow_code:
        fail(path, f"a TypeScript eval file is code, run to read its suite; {RUNS_CODE}")
    limits = project.config.load_limits
    written, path = path, path.absolute()
    if path.stat().st_size > limits.bytes:
        fail(path, f"larger than {limits.bytes} bytes; {how_to_raise('load_limits', 'bytes')}")
    try:
        argv = node_argv(path, READ_EVAL.read_text(encoding="utf-8"), limits, "AgentV")
        said = run_boxed(argv, path, [str(path), str(SDK)], limits, path.name, [SDK])
    except FunctionError as exc:
        fail(written, str(exc).removeprefix(f"{path.name}: "))
    if not isinstance(said, dict) or ("config" not in said and "problem" not in said):
        fail(written, "reading its default export said nothing evalrelay understands")
    if "problem" in said:
        fail(written, f"{said['problem']}")
    return YamlDocument(written, said["config"], None, from_code=True)


def fail(path: Path, why: str) -> NoReturn:
    raise InvalidFileError([Diagnostic(path, 1, 1, why)])

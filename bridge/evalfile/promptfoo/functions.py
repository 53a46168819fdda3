"""Python and JavaScript functions a promptfoo config names (`file://gen.py:make_tests`,
`file://prompt.js:build`), run in a child process under the project's load limits: the
file is code of the config's author, so it runs in the code box (`bridge.code_box`: its
project read-only, no network, no key), with bounded memory, CPU and wall-clock time, no
environment beyond PATH, and speaks JSON only."""

from __future__ import annotations

import json
import resource
import shutil
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalrelay.bridge.code_box import BoxUnavailable, boxed
from evalrelay.bridge.evalfile.limits import MIB, LoadLimits, how_to_raise

RUNNERS = Path(__file__).parent / "runners"


def python_runner(name: str) -> str:
    """A Python runner's text for `python3 -I -c`, after the function loader it uses."""
    loader = (RUNNERS / "python_function.py").read_text(encoding="utf-8")
    return loader + "\n\n" + (RUNNERS / name).read_text(encoding="utf-8")


PYTHON_CALL = python_runner("function_runner.py")
NODE_CALL = """
const { pathToFileURL } = require("url");
const chunks = [];
process.stdin.on("data", (c) => chunks.push(c));
process.stdin.on("end", async () => {
  const [path, name, args] = JSON.parse(Buffer.concat(chunks).toString());
  const imported = await import(pathToFileURL(path).href);
  // promptfoo's reading of a module: its default export's default, its default, itself
  const layers = [imported?.default?.default, imported?.default, imported].filter(Boolean);
  const fn = name
    ? layers.map((m) => m[name]).find((f) => f !== undefined)
    : layers[0];
  if (typeof fn !== "function") {
    throw new Error(`${name || "the default export"} is not a function`);
  }
  const value = await fn(...args);
  process.stdout.write(JSON.stringify(value === undefined ? null : value));
});
"""
"""Loads the module as promptfoo does, by `import()` (CommonJS and ES modules alike);
TypeScript through `tsx`, as promptfoo registers it."""

TYPESCRIPT = (".ts", ".mts", ".cts")
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
"""The only PATH a function gets, and where its Python comes from: the system's."""


class FunctionError(Exception):
    """The function could not run, or did not return JSON; the message says why."""


def split_reference(reference: str) -> tuple[str, str | None]:
    """`file://a/b.py:fn` → (`a/b.py`, `fn`); no function name → (path, None)."""
    path = reference.removeprefix("file://")
    head, sep, tail = path.rpartition(":")
    if sep and tail.isidentifier() and head.endswith((".py", ".js", ".cjs", ".mjs", *TYPESCRIPT)):
        return head, tail
    return path, None


def is_function_file(reference: str) -> bool:
    return split_reference(reference)[0].endswith((".py", ".js", ".cjs", ".mjs", *TYPESCRIPT))


def tsx_for(path: Path) -> str | None:
    """`tsx` (npm's TypeScript runner, which promptfoo loads TypeScript with): the
    project's own, in a `node_modules/.bin` above the file, else one on PATH."""
    for folder in path.parents:
        found = folder / "node_modules" / ".bin" / "tsx"
        if found.is_file():
            return str(found)
    return shutil.which("tsx")


def call_function(path: Path, name: str | None, args: list[Any], limits: LoadLimits) -> Any:
    """The function's JSON return value, `args` cut to as many as a Python function takes.
    A Python file needs the function's name; a JavaScript module without one is called
    as its export."""
    if path.suffix == ".py":
        interpreter = shutil.which("python3", path=SYSTEM_PATH) or "python3"
        argv = [interpreter, "-I", "-c", PYTHON_CALL]
        if name is None:
            raise FunctionError(f"{path.name}: name the function, as file://{path.name}:NAME")
    else:
        argv = node_argv(path, NODE_CALL, limits, "promptfoo")
    what = f"{path.name}:{name or 'default export'}"
    return run_boxed(argv, path, [str(path), name, args], limits, what)


def node_argv(path: Path, script: str, limits: LoadLimits, loader: str) -> list[str]:
    """Node.js running `script` for the module at `path`: TypeScript through `tsx`, as
    `loader` (promptfoo, AgentV) runs it. Node's heap is bounded by its own flag (V8
    reserves more address space than it uses, so no address-space limit there)."""
    node = shutil.which("node")
    if node is None:
        raise FunctionError(f"{path.name}: JavaScript modules need Node.js on this machine")
    if path.suffix in TYPESCRIPT:
        node = tsx_for(path) or ""
        if not node:
            raise FunctionError(
                f"{path.name}: TypeScript runs through tsx, as {loader} runs it; "
                "install it (npm install tsx) beside the file or on PATH"
            )
    return [node, f"--max-old-space-size={limits.memory_mb}", "-e", script]


def run_boxed(
    argv: list[str],
    path: Path,
    payload: Any,
    limits: LoadLimits,
    what: str,
    readable: Sequence[Path] = (),
) -> Any:
    """`argv` run boxed in `path`'s folder under the load limits, `payload` as JSON on
    its standard input; the JSON of its last line of output. `readable`: files of
    evalrelay's own the program reads (the box shows the project and the program only)."""

    def bounded() -> None:
        memory = limits.memory_mb * MIB
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        cpu = max(1, int(limits.seconds))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))

    def unbounded_address_space() -> None:
        # Node.js reserves address space far beyond what it uses (tsx's WebAssembly
        # lexer alone 10 GB), so the loading process's own address-space bound is lifted
        # for it; its data stays bounded by the box (`memory_mb`) and its heap by V8's flag.
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (hard, hard))

    out_of_time = f"{what}: did not finish within {limits.seconds:g} s; " + (
        how_to_raise("load_limits", "seconds")
    )
    try:
        argv, env = boxed(
            argv,
            cwd=path.parent,
            env={"PATH": SYSTEM_PATH},
            memory_mb=limits.memory_mb,
            readable=readable,
        )
    except BoxUnavailable as exc:
        raise FunctionError(f"{path.name}: {exc}") from None
    try:
        done = subprocess.run(
            argv,
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            cwd=path.parent,
            env=env,
            timeout=limits.seconds,
            preexec_fn=bounded if path.suffix == ".py" else unbounded_address_space,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise FunctionError(out_of_time) from None
    if done.returncode in (-signal.SIGXCPU, -signal.SIGKILL):  # its CPU limit, before the clock's
        raise FunctionError(out_of_time)
    if done.returncode != 0:
        # Node.js ends an uncaught error's report with its version: the line before says it.
        said = [line for line in done.stderr.splitlines() if line.strip()]
        said = [line for line in said if not line.startswith("Node.js v")]
        last = (said or ["no message"])[-1]
        raise FunctionError(f"{what} failed: {last[:300]}")
    try:
        return json.loads(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "")
    except (json.JSONDecodeError, IndexError):
        raise FunctionError(
            f"{what}: returned nothing JSON can hold; return lists, mappings, text"
        ) from None

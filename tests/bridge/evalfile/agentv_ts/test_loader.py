"""AgentV's TypeScript eval files, read by real Node.js and tsx in the code box: the
default export is the suite, and its cases are the equivalent YAML suite's."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrelay.bridge.cli.validate import check_file
from evalrelay.bridge.errors import InvalidFileError
from evalrelay.bridge.evalfile.cases import LoadedEvalFile, eval_files_under, load_eval_file
from evalrelay.bridge.evalfile.isolated import load_isolated
from evalrelay.bridge.evalfile.project import Project
from evalrelay.bridge.evalfile.untrusted import Untrusted
from tests.bridge.cli.test_run import evalrelay
from tests.conftest import WriteFiles, embedded_env, read_jsonl
from tests.promptfoo_cli import promptfoo_bin

GREETING_TS = """\
import { type EvalConfig, graders } from 'agentv';
import { greetingPrompt } from './prompts';

const config: EvalConfig = {
  name: 'greetings',
  description: 'Greets in TypeScript',
  providers: ['mock'],
  prompts: [greetingPrompt],
  tags: ['sdk'],
  tests: [
    {
      id: 'hello',
      vars: { task: 'say hello' },
      assert: [
        graders.contains('Hello', { metric: 'says-hello', weight: 2 }),
        graders.regex(/mock\\s+answer/i),
      ],
    },
    {
      id: 'bye',
      vars: { task: 'say goodbye' },
      expectedOutput: 'Goodbye',
      assert: [graders.equals('Goodbye'), graders.isJson({ negate: true })],
    },
  ],
};

export default config;
"""
PROMPTS_TS = "export const greetingPrompt: string = 'Please {{ task }}.';\n"
GREETING_YAML = """\
name: greetings
description: Greets in TypeScript
providers: [mock]
prompts: ['Please {{ task }}.']
tags: [sdk]
tests:
  - id: hello
    vars: {task: say hello}
    assert:
      - {metric: says-hello, type: contains, value: Hello, weight: 2}
      - {type: regex, value: 'mock\\s+answer', flags: i}
  - id: bye
    vars: {task: say goodbye}
    expected_output: Goodbye
    assert: [{type: equals, value: Goodbye}, {type: is-json, negate: true}]
"""


@pytest.fixture
def ts_project(project: WriteFiles) -> WriteFiles:
    """A project with npm's tsx in its node_modules, as an AgentV project has it."""
    root = project({})
    (root / "node_modules" / ".bin").mkdir(parents=True)
    (root / "node_modules" / ".bin" / "tsx").symlink_to(promptfoo_bin() / "tsx")
    return project


def cases_of(loaded: LoadedEvalFile) -> list[object]:
    return [(c.case, c.messages, c.expected, c.system_prompt) for c in loaded.cases]


def test_a_typescript_suite_with_the_sdk_helpers_is_its_yaml_suite(ts_project: WriteFiles) -> None:
    """`graders.*` from `agentv` (not installed: evalrelay's stand-in) give the `assert`
    entries AgentV's give, a RegExp keeps its flags, a sibling module is imported, and
    camelCase keys are lowered as AgentV lowers them."""
    root = ts_project(
        {
            "evals/greetings.eval.ts": GREETING_TS,
            "evals/prompts.ts": PROMPTS_TS,
            "evals/greetings.eval.yaml": GREETING_YAML,
        }
    )
    typescript = load_eval_file(root / "evals/greetings.eval.ts")
    yaml = load_eval_file(root / "evals/greetings.eval.yaml")
    assert [c.id for c in typescript.cases] == ["hello", "bye"]
    assert cases_of(typescript) == cases_of(yaml)
    assert typescript.spec == yaml.spec
    assert typescript.format == "AgentV TypeScript suite (default export: tests, prompts, assert)"
    checked = check_file(root / "evals/greetings.eval.ts")
    assert (checked.cases, checked.problems) == (2, [])
    assert eval_files_under([root / "evals"]) == [
        root / "evals/greetings.eval.ts",
        root / "evals/greetings.eval.yaml",
    ]


SUITE = """\
{
  name: 'plain',
  providers: ['mock'],
  prompts: ['{{ input }}'],
  budgetUsd: 1.5,
  repeat: 2,
  tests: [
    { id: 'one', vars: { input: 'Say hello' }, assert: [{ type: 'contains', value: 'hello' }] },
  ],
}"""
SUITE_YAML = """\
name: plain
providers: [mock]
prompts: ['{{ input }}']
evaluate_options: {budget_usd: 1.5, repeat: 2}
tests:
  - {id: one, vars: {input: Say hello}, assert: [{type: contains, value: hello}]}
"""


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("default.eval.ts", f"const config = {SUITE};\nexport default config;\n"),
        ("module.eval.mts", f"export default {SUITE} as const;\n"),
        ("plain.eval.mjs", f"export default {SUITE};\n"),
        ("common.eval.js", f"module.exports = {SUITE};\n"),
        (
            "defined.eval.ts",
            f"import {{ defineEval }} from 'agentv';\nexport default defineEval({SUITE});\n",
        ),
    ],
)
def test_each_kind_of_module_loads_its_default_export(
    ts_project: WriteFiles, name: str, text: str
) -> None:
    """TypeScript and ES modules, CommonJS, and a `defineEval` suite: `budgetUsd` and
    `repeat` go to `evaluate_options`, as AgentV's loader puts them."""
    root = ts_project({f"evals/{name}": text, "evals/plain.yaml": SUITE_YAML})
    typescript = load_eval_file(root / "evals" / name)
    yaml = load_eval_file(root / "evals/plain.yaml")
    assert [c.id for c in typescript.cases] == ["one"]
    assert cases_of(typescript) == cases_of(yaml)
    assert (typescript.spec, typescript.notes) == (yaml.spec, yaml.notes)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "throw new Error('no suite today');\nexport default {};\n",
            "importing the module failed: Error: no suite today",
        ),
        (
            "export const config = { tests: [] };\n",
            "no default export (it exports `config`: write `export default config`); "
            "AgentV reads an eval file's default export only",
        ),
        ("export const greeting = 'hello';\n", "no default export; AgentV reads"),
        ("export default [{ id: 'a' }];\n", "the default export is a list, not an eval config"),
        (
            "export default { task: async () => 'hi', tests: [] };\n",
            "a config for AgentV's evaluate() API (a `task` function)",
        ),
        (
            "export default { prompts: ['x'], tests: [{ id: 'a', assert: [() => true] }] };\n",
            "default export.tests[0].assert[0] is a JavaScript function",
        ),
        ("export default { name: 'x', prompts: ['x'] };\n", "the default export has no `tests`"),
        (
            "export default { providers: [{ provider: 'mock' }], tests: [{ id: 'a' }] };\n",
            "providers[0]: a provider is a label, or a mapping with `id` and `label`",
        ),
        ("export default { prompts: ['x'], tests: [{ id: 'a' }] ;\n", "importing the module"),
        (
            "import { defineEval } from 'agentv';\n"
            "export default defineEval({ target: 'gpt', tests: [] });\n",
            "defineEval() no longer accepts 'eval.target'",
        ),
    ],
)
def test_a_module_that_gives_no_suite_is_an_error_naming_the_file(
    ts_project: WriteFiles, text: str, said: str
) -> None:
    root = ts_project({"evals/bad.eval.ts": text})
    path = root / "evals/bad.eval.ts"
    with pytest.raises(InvalidFileError) as caught:
        load_eval_file(path)
    (problem,) = caught.value.diagnostics
    assert (problem.path, problem.line) == (path, 1)
    assert said in problem.message
    checked = check_file(path)
    assert [p.message for p in checked.problems] == [problem.message]


def test_a_dropped_typescript_file_runs_only_with_allow_code_and_then_boxed(
    ts_project: WriteFiles,
) -> None:
    """A TypeScript eval file is code: the inbox refuses it without --allow-code, before
    anything in it runs; with it, the module runs in the box (its project read-only) and
    what it exports is held to the allow-list as the YAML suite is."""
    root = ts_project(
        {
            "evals/greetings.eval.ts": GREETING_TS,
            "evals/prompts.ts": PROMPTS_TS,
            "evals/writes.eval.ts": (
                "import { writeFileSync } from 'node:fs';\n"
                "writeFileSync(new URL('./written.txt', import.meta.url), 'x');\n"
                f"export default {SUITE};\n"
            ),
            "evals/defines.eval.ts": (
                "export default { providers: [{ id: 'openai:gpt-4o', config: { apiBaseUrl: "
                "'http://evil' } }], prompts: ['x'], tests: [{ id: 'a' }] };\n"
            ),
        }
    )
    inbox = root / "evals"
    base = Project.containing(inbox / "greetings.eval.ts")
    refused = Project(base.root, base.config, untrusted=Untrusted(inbox=inbox))
    with pytest.raises(InvalidFileError) as caught:
        load_eval_file(inbox / "greetings.eval.ts", refused)
    assert "a TypeScript eval file is code" in str(caught.value)
    assert "--allow-code" in str(caught.value)
    allowed = Project(base.root, base.config, untrusted=Untrusted(inbox=inbox, allow_code=True))
    assert len(load_eval_file(inbox / "greetings.eval.ts", allowed).cases) == 2
    with pytest.raises(InvalidFileError) as caught:
        load_eval_file(inbox / "writes.eval.ts", allowed)
    assert "importing the module failed" in str(caught.value)
    assert not (inbox / "written.txt").exists()
    with pytest.raises(InvalidFileError) as caught:
        load_eval_file(inbox / "defines.eval.ts", allowed)
    assert "--trust-inbox-config" in str(caught.value)


def test_a_typescript_suite_runs_on_the_mock_target_one_result_per_test(
    ts_project: WriteFiles, private_home: Path
) -> None:
    """The builtin mock answers "Mock response": what the TypeScript asserts look for."""
    greetings = GREETING_TS.replace("'Hello'", "'Mock'").replace("mock\\s+answer", "mock\\s+resp")
    greetings = greetings.replace("graders.equals('Goodbye')", "graders.equals('Mock response')")
    root = ts_project({"evals/greetings.eval.ts": greetings, "evals/prompts.ts": PROMPTS_TS})
    env = embedded_env(private_home)
    done = evalrelay("validate", "evals/greetings.eval.ts", env=env, cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "evals/greetings.eval.ts: 2 cases OK (AgentV TypeScript suite" in done.stdout
    done = evalrelay("run", "evals/greetings.eval.ts", "--target", "mock", env=env, cwd=root)
    assert done.returncode == 0, done.stderr
    (jsonl,) = (root / "results").glob("*.jsonl")
    lines = read_jsonl(jsonl)
    assert sorted(str(line["case_id"]) for line in lines) == ["bye", "hello"]
    assert all(line["status"] == "ok" for line in lines), lines
    assert all(line["score"] == 1 for line in lines), lines


def test_the_watcher_loads_a_dropped_typescript_file_under_its_memory_bound(
    ts_project: WriteFiles,
) -> None:
    """The watcher loads each file in a child bounded in address space; Node.js, which
    reserves far more than it uses, runs there bounded by the box instead."""
    root = ts_project({"inbox/greetings.eval.ts": GREETING_TS, "inbox/prompts.ts": PROMPTS_TS})
    inbox = root / "inbox"
    base = Project.containing(inbox / "greetings.eval.ts")
    allowed = Project(base.root, base.config, untrusted=Untrusted(inbox=inbox, allow_code=True))
    loaded = load_isolated(inbox / "greetings.eval.ts", allowed)
    assert [c.id for c in loaded.cases] == ["hello", "bye"]

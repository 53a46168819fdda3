"""What the promptfoo reader makes of each part of a config: ids, providers as targets,
scenarios, generated tests, and the errors it gives, each at the line it is about."""

from __future__ import annotations

import pytest

from evalrelay.bridge.cli.validate import check_file
from evalrelay.bridge.code_box import BOX_HOME
from evalrelay.bridge.errors import InvalidFileError
from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.evalfile.project import Project
from evalrelay.bridge.evalfile.untrusted import Untrusted
from evalrelay.bridge.prompt.build import request_for
from evalrelay.bridge.prompt.messages import ChatMessage
from evalrelay.bridge.prompt.request import api_messages
from evalrelay.bridge.targets.targets_file import Targets
from tests.conftest import WriteFiles
from tests.promptfoo_cli import promptfoo_bin


def test_tests_without_ids_are_named_by_place_and_description(project: WriteFiles) -> None:
    root = project(
        {
            "promptfooconfig.yaml": """\
            prompts: ["Hi {{ name }}"]
            providers: [echo]
            tests:
              - vars: {name: a}
              - description: The second one!
                vars: {name: b}
              - description: The second one!
                vars: {name: c}
            """
        }
    )
    loaded = load_eval_file(root / "promptfooconfig.yaml")
    assert [c.id for c in loaded.cases] == [
        "test-1",
        "test-2-The-second-one",
        "test-3-The-second-one",
    ]
    assert loaded.format.startswith("promptfoo config")


def test_provider_ids_are_targets_without_a_targets_file(project: WriteFiles) -> None:
    root = project(
        {
            "promptfooconfig.yaml": """\
            prompts: ["Hi"]
            providers:
              - id: openai:chat:gpt-4o-mini
                config: {temperature: 0.2, apiKey: sk-never-travels}
              - id: anthropic:messages:claude-sonnet-4-5
                label: claude
              - {ollama:chat:llama3: {config: {baseUrl: "http://127.0.0.1:9/v1"}}}
              - echo
            """
        }
    )
    path = root / "promptfooconfig.yaml"
    targets = Targets.load(root, path)
    gpt = targets.get("openai:chat:gpt-4o-mini")
    assert (gpt.kind, gpt.raw["model"], gpt.raw["temperature"]) == ("openai", "gpt-4o-mini", 0.2)
    assert "sk-never-travels" not in repr(targets.by_name)
    assert targets.get("claude").raw["model"] == "claude-sonnet-4-5"
    llama = targets.get("ollama:chat:llama3")
    assert (llama.kind, llama.raw["base_url"]) == ("openai-compatible", "http://127.0.0.1:9/v1")
    assert targets.get("echo").raw == {"name": "echo", "provider": "mock", "echo": True}
    checked = check_file(path)
    assert checked.problems == [] and checked.cases == 1


def test_scenarios_are_each_config_times_each_test(project: WriteFiles) -> None:
    root = project(
        {
            "promptfooconfig.yaml": """\
            prompts: ["{{ greeting }}, {{ name }}"]
            providers: [echo]
            scenarios:
              - config:
                  - vars: {greeting: Hello}
                  - vars: {greeting: Bonjour}
                tests:
                  - vars: {name: Ann}
                    assert: [{type: contains, value: Ann}]
                  - vars: {name: Bo}
            """
        }
    )
    loaded = load_eval_file(root / "promptfooconfig.yaml")
    sent = [c.messages[0].parts[0].value for c in loaded.cases]  # type: ignore[union-attr]
    assert sent == ["Hello, Ann", "Hello, Bo", "Bonjour, Ann", "Bonjour, Bo"]


def test_a_test_generator_runs_in_a_bounded_child(project: WriteFiles) -> None:
    root = project(
        {
            "evalrelay.yaml": "load_limits: {seconds: 3}\n",
            "gen.py": """\
            import os

            def make_tests():
                home = os.environ.get("HOME", "")
                return [{"vars": {"n": str(i), "home": home}} for i in range(3)]

            def forever():
                while True:
                    pass
            """,
            "promptfooconfig.yaml": """\
            prompts: ["n={{ n }} home={{ home }}"]
            providers: [echo]
            tests: file://gen.py:make_tests
            """,
            "slow/promptfooconfig.yaml": """\
            prompts: ["x"]
            providers: [echo]
            tests:
              - file://../gen.py:forever
            """,
        }
    )
    loaded = load_eval_file(root / "promptfooconfig.yaml")
    assert [c.messages[0].parts[0].value for c in loaded.cases] == [  # type: ignore[union-attr]
        f"n={n} home={BOX_HOME}"
        for n in range(3)  # the code box's own empty home
    ]
    with pytest.raises(InvalidFileError) as caught:
        load_eval_file(root / "slow" / "promptfooconfig.yaml")
    (problem,) = caught.value.diagnostics
    assert (problem.line, problem.column) == (4, 5)
    assert "forever" in problem.message and "load_limits" in problem.message


def test_prompt_functions_build_each_tests_prompt(project: WriteFiles) -> None:
    root = project(
        {
            "prompts.py": """\
            def build(context):
                return [{"role": "system", "content": "Be brief."},
                        {"role": "user", "content": "Capital of " + context["vars"]["c"] + "?"}]

            def broken(context):
                raise RuntimeError("no prompt today")
            """,
            "prompt.js": "module.exports.shout = (context) => `${context.vars.c}!`;\n",
            "promptfooconfig.yaml": """\
            providers: [echo]
            prompts:
              - file://prompts.py:build
              - id: file://prompt.js:shout
                label: loud
            tests:
              - vars: {c: France}
            """,
            "bad/promptfooconfig.yaml": """\
            providers: [echo]
            prompts:
              - file://../prompts.py:broken
            tests:
              - vars: {c: Peru}
            """,
        }
    )
    loaded = load_eval_file(root / "promptfooconfig.yaml")
    assert [c.id for c in loaded.cases] == ["test-1__prompt_build", "test-1__prompt_loud"]
    built, loud = loaded.cases
    assert [(m.role, m.parts[0].value) for m in built.messages] == [  # type: ignore[union-attr]
        ("system", "Be brief."),
        ("user", "Capital of France?"),
    ]
    assert loud.messages[0].parts[0].value == "France!"  # type: ignore[union-attr]
    with pytest.raises(InvalidFileError) as caught:
        load_eval_file(root / "bad" / "promptfooconfig.yaml")
    (problem,) = caught.value.diagnostics
    assert (problem.line, problem.column) == (3, 5)
    assert "prompts.py:broken failed: RuntimeError: no prompt today" in problem.message


def test_a_key_of_the_wrong_shape_is_named_at_its_line(project: WriteFiles) -> None:
    root = project(
        {
            "promptfooconfig.yaml": """\
            description: [not, text]
            prompts: ["hi"]
            providers: [echo]
            scenarios: 3
            """
        }
    )
    with pytest.raises(InvalidFileError) as caught:
        load_eval_file(root / "promptfooconfig.yaml")
    found = [(p.line, p.column, p.message) for p in caught.value.diagnostics]
    assert found == [
        (1, 14, "Input should be a valid string, as promptfoo's reference defines it"),
        (4, 12, "Input should be a valid list, as promptfoo's reference defines it"),
    ]


def test_promptfoo_prompts_go_out_as_written_with_promptfoos_defaults(
    project: WriteFiles,
) -> None:
    """No system message of evalrelay's; `max_tokens` 1024 and temperature 0 unless the
    config sets them, under promptfoo's name for the field; none for reasoning models."""
    root = project(
        {
            "promptfooconfig.yaml": """\
            prompts: ["Hi {{ who }}"]
            providers:
              - openai:chat:gpt-4o-mini
              - {id: openai:chat:o3-mini, label: reasoning}
              - {id: anthropic:messages:claude-sonnet-4-5, config: {temperature: 0.5}}
            tests: [{vars: {who: there}}]
            """
        }
    )
    path = root / "promptfooconfig.yaml"
    loaded = load_eval_file(path)
    assert loaded.spec.grading == "promptfoo"
    request = request_for(loaded.cases[0], default_system=False)
    assert api_messages(request) == [ChatMessage(role="user", content="Hi there")]
    targets = Targets.load(root, path)
    gpt = targets.get("openai:chat:gpt-4o-mini").raw
    assert (gpt["temperature"], gpt["extra_body"]) == (0, {"max_tokens": 1024})
    assert "temperature" not in targets.get("reasoning").raw
    claude = targets.get("anthropic:messages:claude-sonnet-4-5").raw
    assert (claude["temperature"], claude["max_tokens"]) == (0.5, 1024)


def test_validate_names_each_assertion_read_otherwise_at_its_line(
    project: WriteFiles,
) -> None:
    root = project(
        {
            "promptfooconfig.yaml": """\
            prompts: ["Hi"]
            providers: [echo]
            tests:
              - assert:
                  - {type: llm-rubric, value: kind, provider: echo}
                  - {type: factuality, value: Hi, provider: echo}
                  - {type: regex, value: "^hi", flags: i}
            """
        }
    )
    checked = check_file(root / "promptfooconfig.yaml")
    said = [(n.line, n.column, n.message) for n in checked.notes if "promptfoo's" in n.message]
    assert said == [
        (6, 9, "factuality is asked of the grader with evalrelay's judge prompt, not "
         "promptfoo's; its pass and threshold decide as in promptfoo"),
        (7, 44, "promptfoo's regex takes no flags (new RegExp(value)), so they are not "
         "read here either"),
    ]  # fmt: skip


def test_typescript_generators_and_es_module_prompts_load_as_promptfoo_loads_them(
    project: WriteFiles,
) -> None:
    """A `.ts` test generator runs through the project's tsx (npm's, which promptfoo
    uses), its default export or a named one; an ES module's default export is the
    prompt function; a Python string where a function is named fails as in promptfoo."""
    root = project(
        {
            "tests.ts": """\
            interface Test { vars: Record<string, string> }
            export default async function (): Promise<Test[]> {
              return [{ vars: { who: "Ann" } }];
            }
            export function more(): Test[] { return [{ vars: { who: "Bo" } }]; }
            """,
            "prompt.mjs": """\
            export default ({ vars }) => [{ role: "user", content: `Hi ${vars.who}` }];
            """,
            "prompts.py": 'TEXT = "Hi {{ who }}"\n',
            "promptfooconfig.yaml": """\
            prompts: [file://prompt.mjs]
            providers: [echo]
            tests: [file://tests.ts, "file://tests.ts:more"]
            """,
            "py/promptfooconfig.yaml": """\
            prompts: ["file://../prompts.py:TEXT"]
            providers: [echo]
            tests: [{vars: {who: Cy}}]
            """,
        }
    )
    (root / "node_modules" / ".bin").mkdir(parents=True)
    (root / "node_modules" / ".bin" / "tsx").symlink_to(promptfoo_bin() / "tsx")
    loaded = load_eval_file(root / "promptfooconfig.yaml")
    said = [c.messages[0].parts[0].value for c in loaded.cases]  # type: ignore[union-attr]
    assert said == ["Hi Ann", "Hi Bo"]
    with pytest.raises(InvalidFileError) as caught:
        load_eval_file(root / "py" / "promptfooconfig.yaml")
    assert "TEXT is a str, not a function; promptfoo calls it and fails too" in str(caught.value)


@pytest.mark.parametrize(
    ("judge", "text", "runs"),
    [
        ("judge.js", "module.exports = { callApi: async () => ({ output: '{}' }) };\n", "node"),
        ("judge.py", "def call_api(prompt, options, context):\n    return {'output': '{}'}\n",
         "python3"),
    ],
)  # fmt: skip
def test_a_grader_provider_file_runs_as_code_the_inbox_refuses_without_allow_code(
    project: WriteFiles, judge: str, text: str, runs: str
) -> None:
    """`provider: file://judge.js` (or `judge.py`) on a model-graded assertion is a script
    evaluator that loads the provider on the worker: code, so the watcher's existing gate
    applies."""
    root = project(
        {
            judge: text,
            "promptfooconfig.yaml": f"""\
            prompts: ["{{{{ x }}}}"]
            providers: [echo]
            defaultTest: {{options: {{provider: file://{judge}}}}}
            tests:
              - vars: {{x: hi}}
                assert: [{{type: llm-rubric, value: says hi}}, {{type: factuality, value: hi}}]
            """,
        }
    )
    path = root / "promptfooconfig.yaml"
    loaded = load_eval_file(path)
    specs = loaded.cases[0].case.evaluator_specs() or []
    assert [s.type for s in specs] == ["script", "script"]
    assert all(s.script[0] == runs for s in specs)  # type: ignore[union-attr]

    def dropped(**opt_ins: bool) -> Project:
        return Project(root, untrusted=Untrusted(inbox=root, **opt_ins))

    with pytest.raises(InvalidFileError, match="--trust-inbox-config"):
        load_eval_file(path, dropped())  # it names its own judge
    with pytest.raises(InvalidFileError, match="--allow-code"):
        load_eval_file(path, dropped(define_targets=True))  # and that judge is code
    load_eval_file(path, dropped(define_targets=True, allow_code=True))

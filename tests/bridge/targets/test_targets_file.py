"""targets.yaml: per-kind validation, `${VAR}` read only on use, keys never read at all."""

from __future__ import annotations

import pytest

from evalrelay.bridge.errors import InvalidFileError, TargetError
from evalrelay.bridge.evalfile.project import Project
from evalrelay.bridge.targets.settings import AnthropicTarget, ClaudeCodeTarget, OpenAITarget
from evalrelay.bridge.targets.targets_file import Targets
from tests.conftest import WriteFiles

TARGETS = """\
$schema: agentv-targets-v2.2
targets:
  - name: gpt
    provider: openai
    model: ${MODEL_NAME}
    temperature: ${TEMP}
  - name: claude
    provider: anthropic
    model: claude-sonnet-4-5
    api_key: ${{ MY_ANTHROPIC_KEY }}
  - name: local
    provider: openai-compatible
    base_url: http://${LLM_HOST}/v1
    model: qwen
"""


def test_missing_variable_is_an_error_only_for_the_target_that_uses_it(project: WriteFiles) -> None:
    targets = Targets.load(project({"targets.yaml": TARGETS}))
    claude = targets.get("claude").settings({})
    assert isinstance(claude, AnthropicTarget)
    with pytest.raises(
        TargetError, match=r"target 'gpt' needs environment variable\(s\) MODEL_NAME, TEMP"
    ):
        targets.get("gpt").settings({})


def test_variables_are_interpolated_and_typed_by_the_model(project: WriteFiles) -> None:
    targets = Targets.load(project({"targets.yaml": TARGETS}))
    gpt = targets.get("gpt").settings({"MODEL_NAME": "gpt-5", "TEMP": "0.25"})
    assert isinstance(gpt, OpenAITarget)
    assert (gpt.model, gpt.temperature) == ("gpt-5", 0.25)
    local = targets.get("local").settings({"LLM_HOST": "127.0.0.1:8080"})
    assert local.base_url == "http://127.0.0.1:8080/v1"  # type: ignore[union-attr]


def test_api_key_stays_a_variable_name_and_its_value_is_never_read(project: WriteFiles) -> None:
    targets = Targets.load(project({"targets.yaml": TARGETS}))
    claude = targets.get("claude").settings({"MY_ANTHROPIC_KEY": "sk-ant-secret"})
    assert isinstance(claude, AnthropicTarget)
    assert claude.key_env() == "MY_ANTHROPIC_KEY"
    assert "sk-ant-secret" not in claude.model_dump_json()
    gpt = targets.get("gpt").settings({"MODEL_NAME": "m", "TEMP": "0"})
    assert gpt.key_env() == "OPENAI_API_KEY"  # type: ignore[union-attr]


def test_literal_api_key_is_refused_at_load(project: WriteFiles) -> None:
    root = project(
        {
            "targets.yaml": "targets:\n  - {name: c, provider: anthropic, model: m, "
            "api_key: sk-ant-literal}\n"
        }
    )
    with pytest.raises(InvalidFileError) as info:
        Targets.load(root)
    (problem,) = info.value.diagnostics
    assert (problem.line, problem.column) == (2, 55)
    assert "targets[0].api_key: must name an environment variable" in problem.message
    assert "sk-ant-literal" not in str(info.value)


def test_each_kind_is_validated_by_its_own_model(project: WriteFiles) -> None:
    root = project(
        {
            "targets.yaml": """\
        targets:
          - {name: a, provider: anthropic}
          - {name: m, provider: mock, failure_rate: 2}
          - {name: v, provider: vscode, subagent_rot: /x}
          - {name: z, provider: azure, endpoint: https://x}
          - {name: a, provider: codex}
        """
        }
    )
    with pytest.raises(InvalidFileError) as info:
        Targets.load(root)
    assert [(d.line, d.message) for d in info.value.diagnostics] == [
        (2, "missing required key 'model' in targets[0]"),
        (3, "targets[1].failure_rate: Input should be less than or equal to 1"),
        (4, "unknown key 'subagent_rot' in targets[2]; did you mean 'subagent_root'?"),
        (5, "targets[3]: an azure target needs deployment (the Azure deployment name)"),
        (6, "duplicate target name 'a'; names must be unique"),
    ]


def test_agentv_targets_location_and_builtin_mock(project: WriteFiles) -> None:
    root = project({".agentv/targets.yaml": "targets:\n  - {name: codex, provider: codex}\n"})
    targets = Targets.load(root)
    assert targets.get("codex").queue == "agent.codex"
    assert targets.get("mock").queue == "api"
    with pytest.raises(
        TargetError, match=r"unknown target .gpt.*available: codex, mock, mock-judge, nop, oracle"
    ):
        targets.get("gpt")


def test_the_targets_file_nearest_the_eval_file_wins_up_to_the_root(project: WriteFiles) -> None:
    """As in AgentV's repository: an example's own `.agentv/targets.yaml` beside its evals."""
    root = project(
        {
            "targets.yaml": "targets:\n  - {name: top, provider: mock}\n",
            "docs/examples/simple/.agentv/targets.yaml": (
                "targets:\n  - {name: near, provider: codex}\n"
            ),
            "docs/examples/simple/evals/a.yaml": "evalcases: []\n",
            "other/b.yaml": "evalcases: []\n",
        }
    )
    near = Targets.load(root, root / "docs/examples/simple/evals/a.yaml")
    assert near.path == root / "docs/examples/simple/.agentv/targets.yaml"
    assert near.get("near").kind == "codex"
    assert Targets.load(root, root / "other/b.yaml").get("top").kind == "mock"


def test_no_targets_file_says_where_it_looked(project: WriteFiles) -> None:
    root = project({"evals/deep/a.yaml": "evalcases: []\n"})
    targets = Targets.load(root, root / "evals/deep/a.yaml")
    with pytest.raises(TargetError) as raised:
        targets.get("gpt")
    said = str(raised.value)
    assert "no targets file found; looked for targets.yaml" in said
    assert f"{root / 'evals/deep'}, {root / 'evals'}, {root}" in said


AGENTV_TARGETS = """\
$schema: agentv-targets-v2.2
targets:
  - name: azure_base
    provider: azure
    endpoint: ${{ AZURE_OPENAI_ENDPOINT }}
    api_key: ${{ AZURE_OPENAI_API_KEY }}
    model: ${{ AZURE_DEPLOYMENT_NAME }}
    workers: 3
    provider_batching: false
  - name: codex_target
    provider: codex
    judge_target: azure_base
    cwd: ${{ CODEX_WORKSPACE_DIR }}
    log_dir: ${{ CODEX_LOG_DIR }}
    log_format: json
  - name: local_cli
    provider: cli
    judge_target: azure_base
    command_template: uv run ./mock_cli.py --prompt {PROMPT} {FILES} --output {OUTPUT_FILE}
    files_format: --file {path}
    cwd: ..
    verbose: true
    healthcheck: {type: command, command_template: uv run ./mock_cli.py --healthcheck}
  - name: pi
    provider: pi-agent-sdk
    pi_provider: anthropic
"""


def test_an_agentv_targets_file_loads_whole_and_only_a_kind_we_cannot_run_fails_on_use(
    project: WriteFiles,
) -> None:
    targets = Targets.load(project({".agentv/targets.yaml": AGENTV_TARGETS}))
    env = {
        "AZURE_OPENAI_ENDPOINT": "https://x.openai.azure.com",
        "AZURE_OPENAI_API_KEY": "k",
        "AZURE_DEPLOYMENT_NAME": "gpt",
        "CODEX_WORKSPACE_DIR": "/tmp/w",
        "CODEX_LOG_DIR": "/tmp/logs",
    }
    azure = targets.get("azure_base").settings(env)
    assert getattr(azure, "max_concurrency", None) == 3  # AgentV's workers
    codex = targets.get("codex_target").settings(env)
    assert (getattr(codex, "log_dir", None), getattr(codex, "log_format", None)) == (
        "/tmp/logs",
        "json",
    )
    assert targets.get("local_cli").queue == "agent.cli"
    with pytest.raises(TargetError, match="uses provider 'pi-agent-sdk', which evalrelay cannot"):
        targets.get("pi")


AGENTV_CLAUDE_CODE = """\
targets:
  - name: claude-code
    provider: claude-code
    judge_target: azure_base
    command: ${{ CLAUDE_CODE_CLI_PATH }}
    model: claude-sonnet-4-20250514
    arguments: [--allowedTools, "Read,Write,Edit,Bash"]
    timeout_seconds: 180
    cwd: ${{ CLAUDE_CODE_WORKSPACE_DIR }}
    log_directory: ${{ CLAUDE_CODE_LOG_DIR }}
    log_output_format: json
    system_prompt: Include code in your answer.
    workers: 2
    verbose: true
    keep_temp_files: true
    max_turns: 8
"""


def test_an_agentv_claude_code_target_loads_with_agentvs_spellings(project: WriteFiles) -> None:
    """AgentV reads `command`/`binary` for `executable`, `arguments` for `args`,
    `log_directory` and `log_output_format`; so does evalrelay."""
    targets = Targets.load(project({".agentv/targets.yaml": AGENTV_CLAUDE_CODE}))
    claude = targets.get("claude-code")
    assert claude.queue == "agent.cli"
    env = {
        "CLAUDE_CODE_CLI_PATH": "node /opt/claude/cli.js",
        "CLAUDE_CODE_WORKSPACE_DIR": "/tmp/w",
        "CLAUDE_CODE_LOG_DIR": "/tmp/logs",
    }
    settings = claude.settings(env)
    assert isinstance(settings, ClaudeCodeTarget)
    assert settings.executable == "node /opt/claude/cli.js"
    assert settings.args == ["--allowedTools", "Read,Write,Edit,Bash"]
    assert (settings.log_dir, settings.log_format, settings.max_turns) == ("/tmp/logs", "json", 8)


def test_claude_code_keys_it_does_not_read_are_refused_by_name(project: WriteFiles) -> None:
    root = project(
        {
            "targets.yaml": """\
        targets:
          - {name: c, provider: claude-code, timeoutSeconds: 180}
          - {name: d, provider: claude-code, permission_mode: yolo}
        """
        }
    )
    with pytest.raises(InvalidFileError) as info:
        Targets.load(root)
    messages = [d.message for d in info.value.diagnostics]
    assert (
        messages[0] == "unknown key 'timeoutSeconds' in targets[0]; did you mean 'timeout_seconds'?"
    )
    assert messages[1].startswith("targets[1].permission_mode: Input should be 'acceptEdits'")


def test_a_misspelt_key_is_matched_against_the_keys_of_its_own_provider_kind(
    project: WriteFiles,
) -> None:
    root = project(
        {
            "targets.yaml": """\
        targets:
          - {name: gpt, provider: openai, modle: gpt-4o}
          - {name: gpt2, provider: openai, model: gpt-4o, mode: agent}
          - {name: code, provider: vscode, modle: agent}
        """
        }
    )
    with pytest.raises(InvalidFileError) as info:
        Targets.load(root)
    assert [(d.line, d.column, d.message) for d in info.value.diagnostics] == [
        (2, 5, "missing required key 'model' in targets[0]"),
        (2, 35, "unknown key 'modle' in targets[0]; did you mean 'model'?"),
        (
            3,
            51,
            "key 'mode' in targets[1] is not allowed on a 'openai' entry; did you mean 'model'?",
        ),
        (4, 36, "unknown key 'modle' in targets[2]; did you mean 'mode'?"),
    ]


def test_an_empty_targets_file_says_it_needs_targets(project: WriteFiles) -> None:
    root = project({"targets.yaml": "# targets to come\n"})
    with pytest.raises(InvalidFileError) as info:
        Targets.load(root)
    (problem,) = info.value.diagnostics
    assert (problem.line, problem.column, problem.message) == (
        1,
        1,
        "the file is empty: it needs `targets:`",
    )


def test_no_targets_file_says_the_project_root_is_the_nearest_folder_holding_a_marker(
    project: WriteFiles,
) -> None:
    root = project({"evals/a.yaml": "evalcases: []\n"})
    with pytest.raises(TargetError) as raised:
        Targets.load(root, root / "evals/a.yaml").get("gpt")
    assert str(raised.value).endswith(
        f"in {root / 'evals'}, {root}; the project root is {root}, the nearest folder holding "
        "evalrelay.yaml; folders above it are not searched); available: mock, mock-judge, nop, "
        "oracle"
    )


def test_no_targets_file_without_a_project_marker_says_how_to_search_higher(
    project: WriteFiles,
) -> None:
    root = project({"agentv/evals/a.yaml": "evalcases: []\n", ".agentv/targets.yaml": ""})
    (root / "evalrelay.yaml").unlink()  # an AgentV layout: no evalrelay.yaml, no .git
    eval_file = root / "agentv/evals/a.yaml"
    project_root = Project.containing(eval_file).root
    assert project_root == eval_file.parent  # nothing above tmp_path holds a marker
    with pytest.raises(TargetError) as raised:
        Targets.load(project_root, eval_file).get("gpt")
    assert str(raised.value).endswith(
        f"in {eval_file.parent}; the project root is {eval_file.parent}, where the search "
        "began, as no folder above it holds evalrelay.yaml or .git; create evalrelay.yaml "
        "(it may be empty) in a higher folder to make that the root and search up to it); "
        "available: mock, mock-judge, nop, oracle"
    )


def test_a_missing_azure_endpoint_is_named_as_written_not_by_its_old_alias(
    project: WriteFiles,
) -> None:
    root = project({"targets.yaml": "targets:\n  - {name: az, provider: azure, deployment: d}\n"})
    with pytest.raises(InvalidFileError, match="missing required key 'endpoint'"):
        Targets.load(root)
    (root / "targets.yaml").write_text(
        "targets:\n  - {name: az, provider: azure, deployment: d, resource: 'https://r'}\n"
    )
    assert Targets.load(root).get("az").settings({}).endpoint == "https://r"  # type: ignore[union-attr]


def test_a_placeholder_inside_a_shell_script_is_refused_at_load_at_its_line(
    project: WriteFiles,
) -> None:
    """`sh -c 'agent {prompt}'` would run the case's text as shell code on the worker; the
    prompt passed as an argument of its own after the script is fine."""
    root = project(
        {
            "targets.yaml": "targets:\n"
            "  - name: safe\n    provider: cli\n"
            "    command_template: sh -c 'my-agent --task \"$1\"' sh {prompt}\n"
            "  - name: unsafe\n    provider: cli\n"
            "    command_template: sh -c 'my-agent --task {prompt}'\n"
        }
    )
    with pytest.raises(InvalidFileError) as info:
        Targets.load(root)
    (problem,) = info.value.diagnostics
    assert (problem.line, problem.column) == (7, 23)
    assert problem.message.startswith(
        "targets[1].command_template: {prompt} is inside the script `sh -c` runs, so the "
        "case's text would run as code on the worker; pass it as an argument of its own"
    )
    (root / "targets.yaml").write_text(
        "\n".join((root / "targets.yaml").read_text().splitlines()[:4]) + "\n"
    )
    assert Targets.load(root).get("safe").settings({}).command == (  # type: ignore[union-attr]
        "sh -c 'my-agent --task \"$1\"' sh {prompt}"
    )


def test_a_cpu_limit_under_bubblewrap_is_refused_at_load_at_its_line(project: WriteFiles) -> None:
    """Bubblewrap cannot hold CPU use: a limit it would not keep is an error, not ignored."""
    root = project(
        {
            "targets.yaml": "targets:\n"
            "  - name: boxed\n    provider: cli\n    command: [my-agent]\n"
            "    runtime: sandbox\n"
            "    isolation: {engine: bubblewrap, cpus: 1.5}\n"
            "  - name: contained\n    provider: cli\n    command: [my-agent]\n"
            "    runtime: sandbox\n"
            "    isolation: {engine: docker, cpus: 1.5, memory_mb: 512}\n"
        }
    )
    with pytest.raises(InvalidFileError) as info:
        Targets.load(root)
    (problem,) = info.value.diagnostics
    assert (problem.line, problem.column) == (6, 16)
    assert problem.message == (
        "targets[0].isolation: cpus needs engine docker (or auto with a Docker engine on the "
        "worker): bubblewrap cannot hold an agent's CPU use; remove cpus or change the engine"
    )

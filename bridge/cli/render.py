"""`evalrelay render`: show, per case, exactly what each provider would receive."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Group
from rich.panel import Panel
from rich.syntax import Syntax
from rich.text import Text

from evalrelay.bridge.cli.terminal import TerminalConsole, echo, printable
from evalrelay.bridge.evalfile.cases import LoadedCase, LoadedEvalFile, load_eval_file
from evalrelay.bridge.evalfile.harbor.config import StepConfig
from evalrelay.bridge.evalfile.harbor.folder import TASK_FILE, LoadedTask, is_task_folder
from evalrelay.bridge.evalfile.selection import select_cases
from evalrelay.bridge.planning.jobs import attached
from evalrelay.bridge.prompt.build import request_for
from evalrelay.bridge.prompt.messages import ChatMessage
from evalrelay.bridge.prompt.request import PromptRequest, api_messages
from evalrelay.bridge.targets.targets_file import Targets


@click.command("render")
@click.argument("file", type=click.Path(exists=True, path_type=Path))
@click.option("--case", "case_id", help="Render only the cases matching this id (or glob).")
@click.option("--target", "target_name", help="Show the request body this target would send.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per case, one per line.")
def render_command(file: Path, case_id: str | None, target_name: str | None, as_json: bool) -> None:
    """Show what each case of FILE would send: question, chat_prompt, guidelines, wire body.
    For a task folder (it holds task.toml): its container, steps, instructions and limits."""
    if file.is_dir():
        if not is_task_folder(file):
            raise click.UsageError(f"{file} is a folder without task.toml; name an eval file")
        file = file / TASK_FILE
    loaded = load_eval_file(file)
    if loaded.task is not None:
        view = task_view(loaded.task)
        if as_json:
            echo(json.dumps(view, ensure_ascii=False))
        else:
            TerminalConsole().print(readable_task(view))
        return
    (loaded,) = select_cases([loaded], [case_id] if case_id else [])
    for case in loaded.cases:
        view = case_view(loaded, case, target_name)
        if as_json:
            echo(json.dumps(view, ensure_ascii=False))
        else:
            TerminalConsole().print(readable(view))


def case_view(loaded: LoadedEvalFile, case: LoadedCase, target_name: str | None) -> dict[str, Any]:
    """The render record of one case: what every kind of provider would be given."""
    settings = None
    if target_name is not None:
        settings = Targets.load(loaded.project.root, loaded.path).get(target_name).settings()
    request = request_for(
        case,
        settings.system_prompt if settings else None,
        default_system=loaded.spec.grading != "promptfoo",
    )
    messages = api_messages(request)
    return {
        "case_id": case.id,
        "question": request.question,
        "chat_prompt": _as_json(request.chat_prompt) if request.chat_prompt is not None else None,
        "guidelines": request.guidelines,
        "api_messages": _as_json(messages),
        "tools": [t.model_dump(mode="json", exclude_none=True) for t in request.tools or ()],
        "tool_choice": request.model_dump(mode="json")["tool_choice"],
        "wire": _wire(settings, request),
        "task_md": _task(settings, request, case),
        "conversation": _conversation(case),
    }


def _conversation(case: LoadedCase) -> dict[str, Any] | None:
    """A conversation-mode case's turns: each user message is sent after the target's own
    answers to the ones before it (`api_messages` is what comes before the first)."""
    spec = case.case
    if spec.mode != "conversation" or not spec.turns:
        return None
    return {
        "aggregation": spec.aggregation or "mean",
        "on_turn_failure": spec.on_turn_failure or "continue",
        "turns": [
            {
                "turn": number,
                "input": turn.input,
                "expected_output": turn.expected_output,
                "evaluators": [e.type for e in turn.evaluators or ()],
            }
            for number, turn in enumerate(spec.turns, 1)
        ],
    }


def _wire(settings: Any, request: PromptRequest) -> dict[str, Any] | None:
    if settings is None:
        return None
    # The converters live with the worker's providers, so this shows what a worker sends.
    from evalrelay.worker.providers.api import request_body

    return request_body(settings, api_messages(request), request.tools or (), request.tool_choice)


def _task(settings: Any, request: PromptRequest, case: LoadedCase) -> str | None:
    """The task.md a command-line agent target reads, with the attached files at the
    places its workspace would hold them."""
    if settings is None:
        return None
    from evalrelay.worker.agents.inputs import placed
    from evalrelay.worker.providers.agent_cli import task_preview

    files = case.files()
    texts = {f.project_path: f.text for f in files}
    inputs = placed([attached(f) for f in files], lambda f: texts[f.project_path])
    return task_preview(settings, request.question, inputs)


def _as_json(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    return [m.as_json() for m in messages]


def readable(view: dict[str, Any]) -> Panel:
    parts: list[Any] = [
        Text("question (agents)", style="bold"),
        Text(printable(view["question"])),
        Text(),
    ]
    if view["guidelines"]:
        parts += [Text("guidelines", style="bold"), Text(printable(view["guidelines"])), Text()]
    parts.append(Text("api_messages (API providers)", style="bold"))
    for message in view["api_messages"]:
        parts.append(
            Text.assemble((f"[{message['role']}] ", "cyan"), printable(message["content"]))
        )
        for call in message.get("tool_calls") or ():
            parts.append(
                Text(
                    printable(f"  tool call {call['name']}({json.dumps(call['arguments'])})"),
                    style="magenta",
                )
            )
    if view["tools"]:
        parts += [Text(), Text("tools (API providers)", style="bold")]
        for tool in view["tools"]:
            line = f"{tool['name']}{json.dumps(tool['parameters'].get('properties', {}))}"
            parts.append(Text(printable(f"  {line}  {tool.get('description', '')}".rstrip())))
        if view["tool_choice"] is not None:
            parts.append(Text(printable(f"  tool_choice: {json.dumps(view['tool_choice'])}")))
    if view["conversation"] is not None:
        parts += _turn_lines(view["conversation"])
    if view["task_md"] is not None:
        parts += [Text(), Text("task.md (this agent target)", style="bold")]
        parts.append(Text(printable(view["task_md"])))
    if view["wire"] is not None:
        parts += [
            Text(),
            Text("wire body", style="bold"),
            Syntax(json.dumps(view["wire"], indent=2, ensure_ascii=False), "json"),
        ]
    title = printable(f"case {view['case_id']}")
    return Panel(Group(*parts), title=title, title_align="left", expand=False)


def _turn_lines(conversation: dict[str, Any]) -> list[Text]:
    lines = [
        Text(),
        Text(
            f"turns (conversation mode: aggregation {conversation['aggregation']}, "
            f"on_turn_failure {conversation['on_turn_failure']}), each after the target's "
            "answers to the ones before",
            style="bold",
        ),
    ]
    for turn in conversation["turns"]:
        lines.append(
            Text.assemble((f"turn {turn['turn']} [user] ", "cyan"), printable(turn["input"]))
        )
        if turn["expected_output"] is not None:
            lines.append(Text(printable(f"  expected: {turn['expected_output']}"), style="dim"))
        graded = ", ".join(turn["evaluators"]) or "none (scores 1)"
        lines.append(Text(printable(f"  evaluators: {graded}"), style="dim"))
    return lines


def task_view(task: LoadedTask) -> dict[str, Any]:
    """What a trial of the task does: the image and its limits, then each step's
    instruction, time limits and what follows it."""
    config = task.spec.config
    env = config.environment
    steps: list[StepConfig | None] = list(config.steps) or [None]
    return {
        "task": task.spec.name,
        "image": task.spec.image,
        "built_from": "environment/Dockerfile" if task.spec.build else None,
        "cpus": env.cpus,
        "memory_mb": env.memory_mb,
        "network": env.network,
        "workdir": env.workdir,
        "files": len(task.spec.files),
        "steps": [
            {
                "name": step.name if step else None,
                "instruction": instruction,
                "agent_timeout_sec": (step.agent.timeout_sec if step else None)
                or config.agent.timeout_sec,
                "verifier_timeout_sec": (step.verifier.timeout_sec if step else None)
                or config.verifier.timeout_sec,
                "min_reward": step.min_reward if step else None,
                "healthcheck": step.healthcheck.command if step and step.healthcheck else None,
            }
            for step, instruction in zip(steps, task.instructions, strict=True)
        ],
    }


def readable_task(view: dict[str, Any]) -> Panel:
    built = f" (built from {view['built_from']})" if view["built_from"] else ""
    parts: list[Any] = [
        Text(printable(f"image {view['image']}{built}")),
        Text(
            printable(
                f"cpus {view['cpus'] or 'unlimited'}, memory "
                f"{view['memory_mb'] or 'unlimited'} MB, network {view['network']}"
                + (f", workdir {view['workdir']}" if view["workdir"] else "")
            )
        ),
    ]
    for step in view["steps"]:
        title = f"step {step['name']}" if step["name"] else "instruction (the agent's prompt)"
        parts += [
            Text(),
            Text(printable(title), style="bold"),
            Text(printable(step["instruction"])),
        ]
        limits = (
            f"agent {step['agent_timeout_sec']:g} s, tests {step['verifier_timeout_sec']:g} s"
            + (f", min_reward {step['min_reward']}" if step["min_reward"] is not None else "")
            + (f", healthcheck {step['healthcheck']}" if step["healthcheck"] else "")
        )
        parts.append(Text(printable(limits), style="dim"))
    return Panel(Group(*parts), title=printable(f"task {view['task']}"), title_align="left")

"""The worked examples E1-E11 of docs/prompt-building.md, byte for byte, and edge cases.

E1-E10 go through `evalrelay render --json` on real files; E11 (a request built by an
older bridge, with stale guidelines) cannot be written as an eval file, so it goes
through `api_messages` directly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from evalrelay.bridge.cli.main import cli
from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.prompt.build import request_for
from evalrelay.bridge.prompt.messages import ChatMessage
from evalrelay.bridge.prompt.request import PromptRequest, api_messages
from tests.conftest import WriteFiles

SPEC_FILES = {
    "evals/guidelines.instructions.md": "Always be concise\n",
    "evals/code.js": "console.log('test')\n",
    "evals/python.instructions.md": "Use type hints\n",
    "evals/security.instructions.md": "Never log secrets\n",
    "evals/e7/guidelines.instructions.md": "Be concise\n",
}

S, U, A = "system", "user", "assistant"


def msg(role: str, content: str) -> dict[str, str]:
    return {"role": role, "content": content}


def render(project: WriteFiles, eval_yaml: str, name: str = "evals/case.yaml") -> dict[str, Any]:
    root = project({**SPEC_FILES, name: eval_yaml})
    result = CliRunner().invoke(cli, ["render", "--json", str(root / name)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) == 1
    record: dict[str, Any] = json.loads(lines[0])
    return record


def test_e1_system_and_user(project: WriteFiles) -> None:
    record = render(
        project,
        """
        evalcases:
          - id: e1
            input_messages:
              - {role: system, content: You are a helpful assistant.}
              - {role: user, content: "Hello, world!"}
        """,
    )
    chat = [msg(S, "You are a helpful assistant."), msg(U, "Hello, world!")]
    assert record["question"] == "[System]: You are a helpful assistant.\n[User]: Hello, world!"
    assert record["chat_prompt"] == chat
    assert record["api_messages"] == chat
    assert record["guidelines"] == ""


def test_e2_multi_turn_without_system(project: WriteFiles) -> None:
    record = render(
        project,
        """
        evalcases:
          - id: e2
            input_messages:
              - {role: user, content: Debug this code}
              - {role: assistant, content: I can help with that}
              - {role: user, content: "Thanks, here's the code"}
        """,
    )
    turns = [
        msg(U, "Debug this code"),
        msg(A, "I can help with that"),
        msg(U, "Thanks, here's the code"),
    ]
    assert record["question"] == (
        "[User]: Debug this code\n[Assistant]: I can help with that\n"
        "[User]: Thanks, here's the code"
    )
    assert record["chat_prompt"] == turns
    assert record["api_messages"] == [msg(S, "You are a careful assistant."), *turns]


def test_e3_single_user_turn_with_guideline_file(project: WriteFiles) -> None:
    record = render(
        project,
        """
        evalcases:
          - id: e3
            input_messages:
              - role: user
                content:
                  - {type: text, value: Review this code}
                  - {type: file, value: ./guidelines.instructions.md}
        """,
    )
    assert record["question"] == "Review this code\n<Attached: ./guidelines.instructions.md>"
    assert record["guidelines"] == "Always be concise"
    assert record["chat_prompt"] is None
    assert record["api_messages"] == [
        msg(S, "You are a careful assistant.\n\n[[ ## Guidelines ## ]]\n\nAlways be concise"),
        msg(U, "Review this code\n<Attached: ./guidelines.instructions.md>"),
    ]


def test_e4_single_user_turn_with_ordinary_file(project: WriteFiles) -> None:
    record = render(
        project,
        """
        evalcases:
          - id: e4
            input_messages:
              - role: user
                content:
                  - {type: text, value: "Review this:"}
                  - {type: file, value: ./code.js}
        """,
    )
    question = "Review this:\n=== ./code.js ===\nconsole.log('test')"
    assert record["question"] == question
    assert record["chat_prompt"] is None
    assert record["guidelines"] == ""
    assert record["api_messages"] == [msg(S, "You are a careful assistant."), msg(U, question)]


def test_e5_two_guideline_files_only(project: WriteFiles) -> None:
    record = render(
        project,
        """
        evalcases:
          - id: e5
            input_messages:
              - role: user
                content:
                  - {type: file, value: python.instructions.md}
                  - {type: file, value: security.instructions.md}
        """,
    )
    guidelines = (
        "=== python.instructions.md ===\nUse type hints\n\n"
        "=== security.instructions.md ===\nNever log secrets"
    )
    question = "<Attached: python.instructions.md>\n<Attached: security.instructions.md>"
    assert record["question"] == question
    assert record["guidelines"] == guidelines
    assert record["api_messages"] == [
        msg(S, "You are a careful assistant.\n\n[[ ## Guidelines ## ]]\n\n" + guidelines),
        msg(U, question),
    ]


def test_e6_system_plus_guideline_only_user_message(project: WriteFiles) -> None:
    record = render(
        project,
        """
        evalcases:
          - id: e6
            input_messages:
              - {role: system, content: System context}
              - role: user
                content: [{type: file, value: ./guidelines.instructions.md}]
        """,
    )
    chat = [msg(S, "System context\n\n[[ ## Guidelines ## ]]\n\nAlways be concise")]
    assert record["chat_prompt"] == chat
    assert record["question"] == "[System]: System context"
    assert record["api_messages"] == chat


def test_e7_explicit_system_wins_over_metadata(project: WriteFiles) -> None:
    record = render(
        project,
        """
        system_prompt: Default prompt
        evalcases:
          - id: e7
            input_messages:
              - {role: system, content: Custom system context}
              - role: user
                content:
                  - {type: text, value: Hello}
                  - {type: file, value: ./guidelines.instructions.md}
        """,
        name="evals/e7/case.yaml",
    )
    chat = [
        msg(S, "Custom system context\n\n[[ ## Guidelines ## ]]\n\nBe concise"),
        msg(U, "Hello\n<Attached: ./guidelines.instructions.md>"),
    ]
    assert record["chat_prompt"] == chat
    assert record["api_messages"] == chat


def test_e8_later_system_message_keeps_its_place(project: WriteFiles) -> None:
    record = render(
        project,
        """
        evalcases:
          - id: e8
            input_messages:
              - {role: system, content: S1}
              - {role: user, content: U1}
              - {role: assistant, content: A1}
              - {role: system, content: Now answer in French}
              - {role: user, content: U2}
        """,
    )
    chat = [
        msg(S, "S1"),
        msg(U, "U1"),
        msg(A, "A1"),
        msg(A, "[System]: Now answer in French"),
        msg(U, "U2"),
    ]
    assert record["chat_prompt"] == chat
    assert record["question"] == (
        "[System]: S1\n[User]: U1\n[Assistant]: A1\n[System]: Now answer in French\n[User]: U2"
    )
    assert record["api_messages"] == chat


def test_e9_conversation_ending_with_assistant_turn(project: WriteFiles) -> None:
    record = render(
        project,
        """
        evalcases:
          - id: e9
            input_messages:
              - {role: user, content: Hi}
              - {role: assistant, content: "Hello! Anything else?"}
        """,
    )
    chat = [msg(U, "Hi"), msg(A, "Hello! Anything else?")]
    assert record["chat_prompt"] == chat
    assert record["api_messages"] == [msg(S, "You are a careful assistant."), *chat]


def test_e10_single_turn_is_a_legacy_style_request(project: WriteFiles) -> None:
    record = render(
        project,
        """
        evalcases:
          - id: e10
            input_messages:
              - {role: user, content: "What is the capital of France?"}
        """,
    )
    assert record["chat_prompt"] is None
    assert record["api_messages"] == [
        msg(S, "You are a careful assistant."),
        msg(U, "What is the capital of France?"),
    ]


def test_e10_legacy_request_without_chat_prompt() -> None:
    request = PromptRequest(question="What is the capital of France?")
    assert [m.as_json() for m in api_messages(request)] == [
        msg(S, "You are a careful assistant."),
        msg(U, "What is the capital of France?"),
    ]


def test_e11_chat_prompt_ignores_stale_guidelines() -> None:
    chat = [
        ChatMessage(role="system", content="System with guidelines already merged"),
        ChatMessage(role="user", content="Hello"),
    ]
    request = PromptRequest(
        question="Hello", chat_prompt=chat, guidelines="Old guideline 1\n\nOld guideline 2"
    )
    sent = api_messages(request)
    assert sent == chat
    assert not any("Old guideline" in m.content for m in sent)


def test_metadata_system_prompt_used_when_case_has_no_system_message(project: WriteFiles) -> None:
    record = render(
        project,
        """
        system_prompt: Be brief.
        evalcases:
          - id: meta
            input_messages:
              - {role: user, content: Hi}
              - {role: assistant, content: Hello}
              - {role: user, content: Bye}
        """,
    )
    assert record["chat_prompt"][0] == msg(S, "Be brief.")
    assert record["api_messages"] == record["chat_prompt"]


def test_guideline_file_named_twice_is_read_once(project: WriteFiles) -> None:
    record = render(
        project,
        """
        evalcases:
          - id: twice
            input_messages:
              - role: user
                content: [{type: file, value: ./python.instructions.md}, "first"]
              - role: user
                content: [{type: file, value: python.instructions.md}, "second"]
        """,
    )
    assert record["guidelines"] == "Use type hints"
    assert record["chat_prompt"][0] == msg(S, "[[ ## Guidelines ## ]]\n\nUse type hints")


def test_tool_turns_in_transcript_and_chat_prompt(project: WriteFiles) -> None:
    record = render(
        project,
        """
        evalcases:
          - id: tools
            input_messages:
              - {role: user, content: "Weather in Paris?"}
              - role: assistant
                content: ""
                tool_calls: [{id: call_1, name: get_weather, arguments: {city: Paris}}]
              - {role: tool, tool_call_id: call_1, content: '{"temp": 21}'}
              - {role: tool, content: plain tool log}
        """,
    )
    assert record["question"] == (
        "[User]: Weather in Paris?\n"
        '[Assistant]: <Tool call: get_weather {"city": "Paris"}>\n'
        '[Tool]: {"temp": 21}\n'
        "[Tool]: plain tool log"
    )
    assert record["chat_prompt"] == [
        msg(U, "Weather in Paris?"),
        {
            "role": A,
            "content": "",
            "tool_calls": [{"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}],
        },
        {"role": "tool", "content": '{"temp": 21}', "tool_call_id": "call_1"},
        msg("tool", "plain tool log"),
    ]


@pytest.mark.parametrize("crlf", [True, False])
def test_file_text_normalises_line_endings_and_one_trailing_newline(
    project: WriteFiles, crlf: bool
) -> None:
    root = project({"evals/notes.txt": "x"})
    text = "line 1\nline 2\n\n"
    (root / "evals/notes.txt").write_bytes((text.replace("\n", "\r\n") if crlf else text).encode())
    record = render(
        project,
        """
        evalcases:
          - id: notes
            input_messages:
              - role: user
                content: [{type: file, value: notes.txt}]
        """,
    )
    assert record["question"] == "=== notes.txt ===\nline 1\nline 2\n"


def test_render_case_option_selects_one_case(project: WriteFiles, tmp_path: Path) -> None:
    root = project(
        {
            "evals/two.yaml": """
        evalcases:
          - {id: a, input_messages: [{role: user, content: A}]}
          - {id: b, input_messages: [{role: user, content: B}]}
        """
        }
    )
    result = CliRunner().invoke(
        cli, ["render", "--json", "--case", "b", str(root / "evals/two.yaml")]
    )
    assert result.exit_code == 0
    assert [json.loads(line)["case_id"] for line in result.output.splitlines()] == ["b"]


@pytest.mark.parametrize("where", ["case", "file"])
def test_the_cases_system_prompt_beats_the_targets(project: WriteFiles, where: str) -> None:
    conversation = "input_messages: [{role: user, content: Hi}, {role: assistant, content: Yo}]"
    text = (
        f"evalcases: [{{id: c, system_prompt: Be brief., {conversation[:-1]}]}}]\n"
        if where == "case"
        else f"system_prompt: Be brief.\nevalcases: [{{id: c, {conversation}}}]\n"
    )
    root = project({"evals/case.yaml": text})
    (case,) = load_eval_file(root / "evals/case.yaml").cases
    request = request_for(case, "Target prompt")
    assert request.system_prompt == "Be brief."
    assert api_messages(request)[0] == ChatMessage(role="system", content="Be brief.")
    bare = project({"evals/bare.yaml": f"evalcases: [{{id: c, {conversation}}}]\n"})
    (plain,) = load_eval_file(bare / "evals/bare.yaml").cases
    assert request_for(plain, "Target prompt").system_prompt == "Target prompt"


def test_two_leading_system_messages_are_one_system_turn(project: WriteFiles) -> None:
    record = render(
        project,
        """
        evalcases:
          - id: two
            input_messages:
              - {role: system, content: S1}
              - {role: system, content: S2}
              - {role: user, content: U1}
        """,
    )
    assert record["chat_prompt"] == [msg(S, "S1\n\nS2"), msg(U, "U1")]


def test_an_all_system_conversation_is_one_system_turn(project: WriteFiles) -> None:
    record = render(
        project,
        """
        evalcases:
          - id: only
            input_messages:
              - {role: system, content: S1}
              - {role: system, content: S2}
        """,
    )
    assert record["chat_prompt"] == [msg(S, "S1\n\nS2")]
    assert record["question"] == "[System]: S1\n[System]: S2"


def test_tool_call_arguments_keep_their_characters_in_the_transcript(project: WriteFiles) -> None:
    record = render(
        project,
        """
        evalcases:
          - id: accents
            input_messages:
              - {role: user, content: "Météo ?"}
              - role: assistant
                content: Je regarde.
                tool_calls: [{id: c1, name: weather, arguments: {city: Zürich}}]
        """,
    )
    assert record["question"] == (
        '[User]: Météo ?\n[Assistant]: Je regarde.\n<Tool call: weather {"city": "Zürich"}>'
    )


def test_a_prompt_request_refuses_unknown_fields_and_changes() -> None:
    """It travels in jobs: a field this bridge does not know is an error, not dropped."""
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        PromptRequest.model_validate({"question": "q", "sytem_prompt": "typo"})
    request = PromptRequest(question="q")
    with pytest.raises(ValidationError, match="frozen"):
        request.question = "other"  # type: ignore[misc]


def test_a_cases_tools_reach_its_request_and_no_tools_are_none(project: WriteFiles) -> None:
    """An API target offers the model exactly the request's tools; an empty list would be
    an offer of none, which some vendors refuse."""
    root = project(
        {
            "evals/tools.yaml": (
                "evalcases:\n"
                "  - id: t\n"
                "    input_messages: [{role: user, content: Weather?}]\n"
                "    tools: [{name: weather}]\n"
                "    tool_choice: required\n"
                "  - {id: plain, input_messages: [{role: user, content: Hi}]}\n"
            )
        }
    )
    with_tools, plain = load_eval_file(root / "evals/tools.yaml").cases
    request = request_for(with_tools)
    assert [tool.name for tool in request.tools or []] == ["weather"]
    assert request.tool_choice == "required"
    assert request_for(plain).tools is None


def test_a_request_s_own_system_prompt_is_sent_not_the_default() -> None:
    """A request that carries a system prompt (the case's, or its target's) sends it, with
    or without a chat prompt; only a request without one sends the default."""
    from evalrelay.bridge.prompt.messages import DEFAULT_SYSTEM_PROMPT

    own = "You answer in French."
    bare = api_messages(PromptRequest(question="q", system_prompt=own))
    assert [(m.role, m.content) for m in bare] == [(S, own), (U, "q")]
    guided = api_messages(PromptRequest(question="q", guidelines="Be brief.", system_prompt=own))
    assert guided[0].content.startswith(own) and "Be brief." in guided[0].content
    turns = [ChatMessage(role="user", content="q")]
    chat = api_messages(PromptRequest(question="q", chat_prompt=turns, system_prompt=own))
    assert [(m.role, m.content) for m in chat] == [(S, own), (U, "q")]
    default = api_messages(PromptRequest(question="q"))
    assert default[0].content == DEFAULT_SYSTEM_PROMPT != own

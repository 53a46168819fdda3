"""Suite templates stop at their limits: `evalrelay validate` (a real process) refuses a
template bomb within seconds, naming the file, the line, the limit and how to raise it,
and still renders an honest template with a loop."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from jinja2.exceptions import SecurityError

from evalrelay.bridge.evalfile.bounded_templates import Budget
from evalrelay.bridge.evalfile.limits import TemplateLimits
from tests.conftest import WriteFiles

SECONDS = 15.0
"""A bomb is refused well within this (the process itself takes a second to start)."""


def suite(prompt: str) -> str:
    return f"prompts:\n  - {json.dumps(prompt)}\ntests:\n  - id: t1\n    vars: {{q: hi}}\n"


def evalrelay(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "evalrelay", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


BOMBS = {
    "nested loops": (
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        "over 100000 loop iterations",
        "iterations",
    ),
    "loops printing x": (
        "{% for i in range(300) %}{% for j in range(300) %}xxxxxxxxxxxxxxxx{% endfor %}"
        "{% endfor %}",
        "the template's output would be over 1048576 characters",
        "output_bytes",
    ),
    "string times a billion": ("{{ 'x' * 10**9 }}", "the result of *", "output_bytes"),
    "namespace doubled with ~": (
        "{% set ns = namespace(s='x') %}{% for i in range(64) %}"
        "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}",
        "a string joined with ~",
        "output_bytes",
    ),
    "percent format width": ("{{ '%09999999d' % 1 }}", "the result of %", "output_bytes"),
    "center filter": ("{{ q|center(1000000000) }}", "center filter", "output_bytes"),
    "str.format width": ("{{ '{:>999999999}'.format(1) }}", "the string built", "output_bytes"),
    "set block filled in a loop": (
        "{% set a %}{% for i in range(100000) %}{{ 'y' * 1000000 }}{% endfor %}{% endset %}"
        "{{ a|length }}",
        "what the template writes",
        "output_bytes",
    ),
    "macro calling itself twice": (
        "{% macro f(n) %}{{ f(n) }}{{ f(n) }}{% endmacro %}{{ f(1) }}",
        "macros call each other too deeply",
        None,
    ),
}


@pytest.mark.parametrize("name", list(BOMBS))
def test_template_bomb_is_refused_within_seconds_naming_line_and_limit(
    project: WriteFiles, name: str
) -> None:
    prompt, said, limit = BOMBS[name]
    root = project({"evalrelay.yaml": "", "bomb.yaml": suite(prompt)})
    code, output, seconds = evalrelay("validate", str(root / "bomb.yaml"))
    assert code == 1, output
    assert seconds < SECONDS, output
    assert f"{root}/bomb.yaml:2:5: template" in output
    assert said in output
    if limit:
        assert f"raise `template_limits: {{{limit}: ...}}` in evalrelay.yaml" in output


def test_list_append_is_refused(project: WriteFiles) -> None:
    root = project({"evalrelay.yaml": "", "bomb.yaml": suite("{% set l = [] %}{{ l.append(1) }}")})
    code, output, _ = evalrelay("validate", str(root / "bomb.yaml"))
    assert code == 1
    assert "access to attribute 'append' of 'list' object is unsafe" in output


def test_honest_template_with_a_loop_renders(project: WriteFiles) -> None:
    prompt = "{% for x in items %}{{ loop.index }}. {{ x|upper }}; {% endfor %}{{ q ~ '!' }}"
    text = suite(prompt).replace("{q: hi}", "{q: hi, items: [a, b]}")
    root = project({"evalrelay.yaml": "", "ok.yaml": text})
    code, output, _ = evalrelay("render", "--json", str(root / "ok.yaml"))
    assert code == 0, output
    assert "1. A; 2. B; hi!" in output


def test_limits_are_set_in_evalrelay_yaml(project: WriteFiles) -> None:
    prompt = "{% for i in range(20) %}{{ i }}{% endfor %}"
    config = "template_limits: {iterations: 10}\n"
    root = project({"evalrelay.yaml": config, "a.yaml": suite(prompt)})
    code, output, _ = evalrelay("validate", str(root / "a.yaml"))
    assert code == 1
    assert "range of 20 numbers is over the 10 loop iterations" in output
    (root / "evalrelay.yaml").write_text("template_limits: {iterations: 20}\n")
    code, output, _ = evalrelay("validate", str(root / "a.yaml"))
    assert code == 0, output


SECRETS = {"EVALRELAY_REDIS_URL": "redis://:hunter2@db:6379/0", "DATABASE_URL": "pg://u:pw9@x"}


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("EVALRELAY_REDIS_URL", "looks like a secret and would be sent in every job"),
        ("DATABASE_URL", "holds a URL with a password and would be sent in every job"),
        ("OPENAI_API_KEY", "looks like a secret and would be sent in every job"),
    ],
)
def test_no_file_reads_a_secret_from_the_environment(
    project: WriteFiles, name: str, said: str
) -> None:
    root = project({"evalrelay.yaml": "", "a.yaml": suite(f"{{{{ env.{name} }}}} {{{{ q }}}}")})
    env = {**SECRETS, "OPENAI_API_KEY": "sk-0123456789"}
    code, output, _ = evalrelay("validate", str(root / "a.yaml"), env=env)
    assert code == 1
    assert f"env.{name} {said}" in output
    assert env[name] not in output


def test_the_operators_file_reads_a_variable_by_name(project: WriteFiles) -> None:
    """As AgentV's env-interpolation example does: no `template_env` needed."""
    prompt = "{{ env.CUSTOM_SYSTEM_PROMPT }} / {{ env.UNSET_ONE | default('fallback') }}"
    root = project({"evalrelay.yaml": "", "a.yaml": suite(prompt)})
    code, output, _ = evalrelay(
        "render", "--json", str(root / "a.yaml"), env={"CUSTOM_SYSTEM_PROMPT": "be brief"}
    )
    assert code == 0, output
    assert "be brief / fallback" in output


def test_an_untrusted_file_reads_only_listed_variables(project: WriteFiles) -> None:
    root = project({"evalrelay.yaml": "", "in/a.yaml": suite("{{ env.HOME }} {{ q }}")})
    code, output, _ = evalrelay("validate", "--untrusted", str(root / "in"))
    assert code == 1
    assert f"env.HOME is not listed in `template_env` in {root}/evalrelay.yaml" in output
    assert os.environ["HOME"] not in output.replace(str(root), "")


ESCAPES = {
    "read": "{{ env.project.root.joinpath('/proc/self/environ').read_text() | reverse | join }}",
    "write": "{{ env.project.root.joinpath('targets.yaml').write_text('targets: []') }}",
    "config": "{{ env._config }}",
    "class": "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "method of a mapping": "{{ env.get('HOME') }}",
}


@pytest.mark.parametrize("name", list(ESCAPES))
@pytest.mark.parametrize("command", ["validate", "render", "validate --untrusted"])
def test_a_template_reaches_no_object_with_methods(
    project: WriteFiles, name: str, command: str
) -> None:
    """The issue's attacks: a template that walks from `env` to a path, to read the
    process's environment or rewrite the operator's targets file."""
    targets = "targets:\n  - {name: main, provider: mock}\n"
    root = project(
        {"evalrelay.yaml": "", "targets.yaml": targets, "in/a.yaml": suite(ESCAPES[name])}
    )
    code, output, _ = evalrelay(*command.split(), str(root / "in" / "a.yaml"), env=SECRETS)
    assert code == 1, output
    assert f"{root}/in/a.yaml:2:5: template error" in output or "nothing to send" in output
    assert not any(v in output or v[::-1] in output for v in SECRETS.values())
    assert (root / "targets.yaml").read_text() == targets


def test_loop_over_env_shows_only_the_listed_variables(project: WriteFiles) -> None:
    prompt = "[{% for k in env %}{{ k }}={{ env[k] }};{% endfor %}] {{ env.SHOWN }}"
    root = project({"evalrelay.yaml": "template_env: [SHOWN]\n", "a.yaml": suite(prompt)})
    code, output, _ = evalrelay(
        "render", "--json", str(root / "a.yaml"), env={**SECRETS, "SHOWN": "visible"}
    )
    assert code == 0, output
    assert "[SHOWN=visible;] visible" in output
    assert not any(value in output for value in SECRETS.values())


def test_an_object_in_a_context_offers_no_attribute() -> None:
    """Were a path ever put in a template's context, its methods would stay out of reach:
    attributes are looked up on data only."""
    budget = Budget(TemplateLimits())
    with pytest.raises(SecurityError, match="access to attribute 'read_text' of 'PosixPath'"):
        budget.render("{{ p.read_text() }}", {"p": Path("/proc/self/environ")})
    assert budget.render("{{ s.upper() }} {{ d.get('k') }}", {"s": "a", "d": {"k": 1}}) == "A 1"

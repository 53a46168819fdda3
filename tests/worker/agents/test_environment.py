"""An agent's environment: the few variables any program needs, its vendor's and what its
target names; nothing else of the worker's."""

from __future__ import annotations

from evalrelay.worker.agents.environment import agent_environment

WORKER = {
    "PATH": "/usr/bin",
    "HOME": "/home/w",
    "LC_ALL": "C.UTF-8",
    "EVALRELAY_REDIS_URL": "redis://:pw@redis:6379/0",
    "OPENAI_API_KEY": "sk-openai",
    "ANTHROPIC_API_KEY": "sk-ant",
    "COPILOT_PROVIDER_API_KEY": "cop",
    "DATABASE_URL": "postgres://u:p@db/x",
    "TEAM_SETTING": "1",
    "TEAM_OTHER": "2",
}


def test_only_the_base_variables_by_default() -> None:
    assert agent_environment(source=WORKER) == {
        "PATH": "/usr/bin",
        "HOME": "/home/w",
        "LC_ALL": "C.UTF-8",
    }


def test_vendor_variables_by_name_and_prefix_and_what_the_target_names() -> None:
    env = agent_environment(
        vendor=("OPENAI_API_KEY", "COPILOT_*"),
        named={"AIMOCK_API_KEY": "k", "PATH": "/opt/agent/bin"},
        source=WORKER,
    )
    assert env == {
        "PATH": "/opt/agent/bin",  # the target's own value wins
        "HOME": "/home/w",
        "LC_ALL": "C.UTF-8",
        "OPENAI_API_KEY": "sk-openai",
        "COPILOT_PROVIDER_API_KEY": "cop",
        "AIMOCK_API_KEY": "k",
    }


def test_inherit_env_lets_named_variables_through() -> None:
    env = agent_environment(inherit=["TEAM_*", "DATABASE_URL"], source=WORKER)
    assert {"TEAM_SETTING", "TEAM_OTHER", "DATABASE_URL"} <= set(env)
    assert "EVALRELAY_REDIS_URL" not in env and "ANTHROPIC_API_KEY" not in env

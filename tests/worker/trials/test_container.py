"""What a trial's container is given of the worker: only the variables it shares."""

from __future__ import annotations

import pytest

from evalrelay.worker.trials.container import SHARED_VARIABLES, expanded


def test_environment_values_read_only_the_variables_the_worker_shares(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REGION", "eu-west")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-worker-secret-0123456789")
    monkeypatch.setenv(SHARED_VARIABLES, "REGION, MISSING")
    assert expanded(
        {
            "WHERE": "region ${REGION}",
            "KEY": "${OPENAI_API_KEY}",
            "FALLBACK": "${OPENAI_API_KEY:-none}",
            "UNSET": "${MISSING:-default}",
            "PLAIN": "as written",
        }
    ) == {
        "WHERE": "region eu-west",
        "KEY": "",
        "FALLBACK": "none",
        "UNSET": "default",
        "PLAIN": "as written",
    }

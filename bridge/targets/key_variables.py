"""The variables the API providers read their keys from when a target names none.

A module of its own, and no pydantic: every command masks these in its logs from its
first line, and loading the targets' settings models for that would cost every command a
third of a second. The settings models' `KEY_ENV` name the same variables (a test holds
the two together)."""

from __future__ import annotations

DEFAULT_KEY_VARIABLES = frozenset(
    {"OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"}
)

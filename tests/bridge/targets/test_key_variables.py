"""The key variables every command masks from its start are the API providers' own."""

from __future__ import annotations

from evalrelay.bridge.targets.key_variables import DEFAULT_KEY_VARIABLES
from evalrelay.bridge.targets.settings import API_KEY_TARGETS, ApiTargetBase


def test_the_masked_variables_are_those_the_api_providers_read() -> None:
    assert {cls.KEY_ENV for cls in API_KEY_TARGETS} == DEFAULT_KEY_VARIABLES


def test_every_provider_reading_a_key_variable_is_listed() -> None:
    """A provider added with a `KEY_ENV` of its own must be masked too."""
    readers = {cls for cls in _subclasses(ApiTargetBase) if cls.KEY_ENV}
    assert readers <= set(API_KEY_TARGETS)


def _subclasses(cls: type[ApiTargetBase]) -> set[type[ApiTargetBase]]:
    found = set(cls.__subclasses__())
    for sub in list(found):
        found |= _subclasses(sub)
    return found

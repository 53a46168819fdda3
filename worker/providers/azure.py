"""Azure OpenAI: the OpenAI provider and wire format, with Azure's endpoint and deployment."""

from __future__ import annotations

from typing import Any

from bridge.targets.settings import AzureTarget
from worker.providers.openai import OpenAIProvider


class AzureProvider(OpenAIProvider):
    settings: AzureTarget  # type: ignore[assignment]

    def model_name(self) -> str:
        return self.settings.deployment_name()

    def endpoint(self) -> str:
        return f"{self.settings.endpoint}/{self.settings.deployment_name()}"

    def connect(self) -> Any:
        try:
            import openai
        except ImportError:
            raise self.missing_sdk("openai") from None
        return openai.AzureOpenAI(
            api_key=self.api_key(),
            azure_endpoint=self.settings.endpoint,
            azure_deployment=self.settings.deployment_name(),
            api_version=self.settings.api_version,
            max_retries=0,
        )

"""Azure OpenAI: the OpenAI provider and wire format, with Azure's endpoint and deployment."""

from __future__ import annotations

from typing import Any

from evalrelay.bridge.targets.settings import AzureTarget
from evalrelay.worker.providers.openai import OpenAIProvider


class AzureProvider(OpenAIProvider):
    settings: AzureTarget  # type: ignore[assignment]

    def model_name(self) -> str:
        return self.settings.deployment_name()

    def endpoint(self) -> str:
        return f"{self.settings.endpoint}/{self.settings.deployment_name()}"

    def connect(self) -> Any:
        return self._sdk().AzureOpenAI(**self.client_options())

    def aconnect(self) -> Any:
        return self._sdk().AsyncAzureOpenAI(**self.client_options())

    def client_options(self) -> dict[str, Any]:
        return {
            "api_key": self.api_key(),
            "azure_endpoint": self.settings.endpoint,
            "azure_deployment": self.settings.deployment_name(),
            "api_version": self.settings.api_version,
            "max_retries": 0,
        }

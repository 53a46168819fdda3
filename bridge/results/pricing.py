"""A result's cost in dollars: the vendor's figure when it gives one, else its tokens priced
with Pydantic's `genai-prices` database (the snapshot shipped with the installed package;
no network call is made)."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from evalrelay.bridge.results.result import Cost, Usage

log = logging.getLogger(__name__)

_importing = threading.Lock()

PRICE_PROVIDERS = {
    **{kind: kind for kind in ("openai", "anthropic", "azure")},
    "azure-openai": "azure",
    **dict.fromkeys(("gemini", "google", "google-gemini"), "google"),
}
"""Our provider kinds as the price database names them; others go by model alone."""


def cost_of(
    usage: Usage | None,
    models: Sequence[str | None],
    vendor_usd: float | None,
    provider: str | None = None,
) -> Cost | None:
    """The cost of one answer, priced as the first of `models` the database knows (the
    model the vendor says answered, then the one the target names); None when the vendor
    said nothing and neither the models nor the token counts are known."""
    if vendor_usd is not None:
        return Cost(usd=vendor_usd, source="vendor")
    if usage is None or usage.input_tokens is None:
        return None
    with _importing:  # a worker's threads price answers at once: one of them imports
        # Imported here: the database (and the HTTP client it brings) is for answers with
        # token counts only, and every worker, collector and `run` imports this module.
        from genai_prices import Usage as PricedUsage

    priced = PricedUsage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens or 0,
        cache_read_tokens=usage.cached_input_tokens or None,
    )
    for model in filter(None, models):
        # The vendor's own name for it first; a compatible server (`base_url`) may serve
        # a model the database knows under another vendor.
        for vendor in dict.fromkeys((provider, None)):
            found = _priced_model(model, vendor)
            if found is None:
                continue
            provider, info = found
            price = info.calc_price(priced, provider, genai_request_timestamp=datetime.now(UTC))
            return Cost(usd=float(price.total_price), source="genai-prices")
    log.debug("no price for any of the models %s", models)
    return None


@functools.lru_cache(maxsize=1024)
def _priced_model(model: str, vendor: str | None) -> tuple[Any, Any] | None:
    """The database's provider and model for a name, looked up once per process: a name
    it does not know is searched for in every provider, a cost paid for every answer."""
    with _importing:
        from genai_prices import data_snapshot

    try:
        return data_snapshot.get_snapshot().find_provider_model(model, None, vendor, None)
    except LookupError:
        return None

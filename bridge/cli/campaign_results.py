"""Finding a campaign's results file for the commands that read one (`report`, `compare`,
`export`): the `--results` option and the lookup, on disk and then in Redis."""

from __future__ import annotations

from pathlib import Path

import click

from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.queue.campaigns import (
    LATEST,
    AmbiguousCampaign,
    CampaignInfo,
    load_info,
    resolve_campaign,
)
from evalrelay.bridge.queue.runtime import open_runtime
from evalrelay.bridge.reports.campaign import find_results
from evalrelay.bridge.results.results_file import results_path

results_option = click.option(
    "--results",
    type=click.Path(path_type=Path, file_okay=False),
    help="The results folder to find campaigns in (default: the project's).",
)


def results_file(campaign: str, results: Path | None) -> Path:
    """CAMPAIGN's results file: a .jsonl path, or an id found on disk; else what Redis
    knows of it (`latest`, a `run --name`, the start of an id), for where `run` put it."""
    if campaign == LATEST:
        info = _known_to_redis(campaign, None)
    else:
        try:
            return find_results(campaign, results)
        except EvalrelayError as not_on_disk:
            if campaign.endswith(".jsonl"):
                raise
            info = _known_to_redis(campaign, not_on_disk)
    folders = [results, Path(info.out_dir)] if results else [Path(info.out_dir)]
    for folder in folders:
        path = results_path(folder, info.campaign_id)
        if path.is_file():
            return path
    raise EvalrelayError(
        f"campaign {info.campaign_id} has no results file in {' or '.join(map(str, folders))}"
    )


def _known_to_redis(campaign: str, not_on_disk: EvalrelayError | None) -> CampaignInfo:
    """The campaign Redis knows by that text; one it does not know either gets the error
    about the results folder (`not_on_disk`), which names the campaigns there."""
    try:
        with open_runtime(worker=False) as runtime:
            return load_info(runtime.client, resolve_campaign(runtime.client, campaign))
    except AmbiguousCampaign:
        raise
    except EvalrelayError:
        if not_on_disk is None:
            raise
        raise not_on_disk from None

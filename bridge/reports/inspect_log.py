"""A campaign as Inspect AI eval logs (`evalrelay export --inspect`), for `inspect view`.

An Inspect log is one task run by one model, so each target gets a log of its own (the
samples are `inspect_samples`, the header `inspect_header`).

Results are read one at a time, and each sample goes to the file as it is made: a `.eval`
log is a zip with a member per sample, and the summaries and the `.json` log's samples
wait in a temporary file until the header, which counts them, is known.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from zipfile import ZIP_DEFLATED, ZipFile

from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.reports import inspect_models as inspect
from evalrelay.bridge.reports.campaign import CampaignResults
from evalrelay.bridge.reports.inspect_header import CampaignFacts, LogTally
from evalrelay.bridge.reports.inspect_samples import inspect_sample
from evalrelay.bridge.results.result import Result
from evalrelay.bridge.results.summary import replaced_whole

SUFFIXES = (".eval", ".json")


def check_suffix(path: Path) -> None:
    if path.suffix not in SUFFIXES:
        raise EvalrelayError(
            f"{path}: an Inspect log is a .eval file (a zip, best for big campaigns) "
            f"or a .json file; give one of those suffixes, not {path.suffix or 'none'!r}"
        )


def write_inspect_logs(campaign: CampaignResults, path: Path, target: str | None) -> list[Path]:
    """One log per target (or `target`'s alone) at `path`, or beside it as
    `<stem>-<target><suffix>` when there are several."""
    check_suffix(path)
    targets = _chosen_targets(campaign, target)
    facts = CampaignFacts.of(campaign)
    written = []
    for name, out in _log_paths(path, targets).items():
        out.parent.mkdir(parents=True, exist_ok=True)
        tally = LogTally()
        header = partial(facts.header, name, tally, campaign)
        write = _write_eval if out.suffix == ".eval" else _write_json
        write(out, (tally.add(r, s) for r, s in _samples(campaign, name, facts)), header)
        written.append(out)
    return written


def _samples(
    campaign: CampaignResults, target: str, facts: CampaignFacts
) -> Iterator[tuple[Result, inspect.EvalSample]]:
    """Each result of the target and its sample. Two results of one case and repeat (two
    eval files of one dataset name) would be one sample: the second is told by its job."""
    previous = None
    for result in campaign.results(target):
        sample_id = facts.sample_id(result)
        key, previous = previous, (sample_id, result.repeat)
        if key == previous:
            sample_id = f"{sample_id}@{result.job_id}"
        yield result, inspect_sample(result, sample_id, target)


def _chosen_targets(campaign: CampaignResults, target: str | None) -> list[str]:
    targets = sorted(campaign.tallies)
    if not targets:
        raise EvalrelayError(f"campaign {campaign.campaign_id} has no results to export")
    if target is None:
        return targets
    if target not in campaign.tallies:
        raise EvalrelayError(
            f"campaign {campaign.campaign_id} has no target {target!r}; "
            f"its targets: {', '.join(targets)}"
        )
    return [target]


def _log_paths(path: Path, targets: list[str]) -> dict[str, Path]:
    if len(targets) == 1:
        return {targets[0]: path}
    paths: dict[str, Path] = {}
    for target in targets:
        candidate, n = path.with_name(f"{path.stem}-{slug(target)}{path.suffix}"), 1
        while candidate in paths.values():
            n += 1
            candidate = path.with_name(f"{path.stem}-{slug(target)}-{n}{path.suffix}")
        paths[target] = candidate
    return paths


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "target"


def listing_hint(path: Path) -> str | None:
    """`inspect view` shows a `.json` log only when its name starts with a timestamp, as
    Inspect names its own logs (a `.eval` log whatever its name)."""
    if path.suffix == ".json" and not re.match(
        r"\d{4}-\d{2}-\d{2}T\d{2}[:-]\d{2}[:-]\d{2}", path.name
    ):
        return (
            f"note: inspect view shows {path.name} only under a name that starts with a "
            "timestamp, as 2026-01-31T12-00-00_evals.json; rename it, or export to .eval"
        )
    return None


Samples = Iterator[inspect.EvalSample]
Header = Callable[[], inspect.EvalLogHeader]


def _write_eval(path: Path, samples: Samples, header: Header) -> None:
    """Inspect's `.eval` zip: a member per sample, `summaries.json`, `header.json` and the
    journal's `start.json` (what a reader of an unfinished log falls back on)."""
    with replaced_whole(path) as handle, ZipFile(handle, "w", ZIP_DEFLATED) as archive:
        with tempfile.TemporaryFile() as summaries:
            summaries.write(b"[")
            for n, sample in enumerate(samples):
                archive.writestr(f"samples/{sample.id}_epoch_{sample.epoch}.json", sample.as_json())
                summaries.write((b"," if n else b"") + sample.summary().as_json())
            summaries.write(b"]")
            large = summaries.tell() >= 2**31
            summaries.seek(0)
            with archive.open("summaries.json", "w", force_zip64=large) as member:
                shutil.copyfileobj(summaries, member)
        done = header()
        archive.writestr(
            "_journal/start.json", inspect.LogStart(eval=done.eval, plan=done.plan).as_json()
        )
        archive.writestr("header.json", done.as_json())


def _write_json(path: Path, samples: Samples, header: Header) -> None:
    """Inspect's `.json` log: the header's fields, then `samples`, which its streaming
    header reader stops at."""
    with tempfile.TemporaryFile() as body:
        for n, sample in enumerate(samples):
            body.write((b"," if n else b"") + sample.as_json())
        head = header().as_json()
        body.seek(0)
        with replaced_whole(path) as handle:
            handle.write(head[:-1] + b',"samples":[')
            shutil.copyfileobj(body, handle)
            handle.write(b"]}")

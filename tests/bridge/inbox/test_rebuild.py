"""Planning again, from its copy in `queued/`, a campaign dropped in the inbox that Redis
lost: the same jobs as when it was dropped, and only from the very content queued, loaded
with the operator's configuration."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from evalrelay.bridge.contract.job import job_id
from evalrelay.bridge.errors import EvalrelayError, InvalidFileError
from evalrelay.bridge.inbox.folders import Inbox
from evalrelay.bridge.inbox.intake import drop_identity
from evalrelay.bridge.inbox.rebuild import plan_dropped
from evalrelay.bridge.inbox.trust import InboxTrust
from evalrelay.bridge.queue.campaigns import CampaignInfo, Plan
from evalrelay.bridge.queue.rebuild import CampaignRecord, DroppedFile
from tests.conftest import WriteFiles, one_turn_cases

TARGETS = "targets:\n  - {name: main, provider: mock}\n  - {name: other, provider: mock}\n"
CASES = 4


def queued_record(
    inbox: Inbox, dropped_as: str, queued_as: str, text: str, total: int = CASES
) -> CampaignRecord:
    """A file dropped as `dropped_as` that waits in `queued/` as `queued_as`, and the
    record a watcher (started with `--target main`) kept of its campaign."""
    queued = inbox.root / queued_as
    queued.parent.mkdir(parents=True, exist_ok=True)
    queued.write_text(text)
    dropped_at = inbox.root / dropped_as
    folder_target = inbox.folder_target(dropped_at)
    return CampaignRecord(
        info=CampaignInfo(
            campaign_id="dropped-20260101-000000-abcd",
            created_at=datetime.now(UTC),
            sources=[str(dropped_at)],
            targets=["main"],
            total=total,
            out_dir=str(inbox.root.parent / "results"),
            collector="watch",
            plan=Plan(fallback_target=folder_target or "main"),
        ),
        dropped=DroppedFile(
            inbox=str(inbox.root),
            path=dropped_as,
            queued=queued_as,
            identity=drop_identity(text.encode(), folder_target),
        ),
    )


@pytest.fixture
def inbox(project: WriteFiles) -> Inbox:
    return Inbox(project({"targets.yaml": TARGETS, "inbox/.keep": ""}) / "inbox")


def test_a_copy_renamed_in_queued_gives_the_jobs_its_drop_gave(inbox: Inbox) -> None:
    """`queued/` already held a `geo.yaml`, so this one waits as `geo-1.yaml`: its jobs
    still carry the dataset name of the file as dropped, and so the same ids."""
    text = one_turn_cases(CASES)
    record = queued_record(inbox, "other/geo.yaml", "queued/other/geo-1.yaml", text)
    loaded, jobs = plan_dropped(record, inbox, InboxTrust())
    assert loaded.dataset == "geo"
    assert {j.target.name for j in jobs} == {"other"}  # its target folder's
    campaign = record.campaign_id
    assert [j.job_id for j in jobs] == [
        job_id(campaign, "geo", f"c{i}", "other", 0) for i in range(CASES)
    ]


def test_a_copy_changed_since_it_was_queued_is_refused(inbox: Inbox) -> None:
    record = queued_record(inbox, "geo.yaml", "queued/geo.yaml", one_turn_cases(CASES))
    (inbox.root / "queued" / "geo.yaml").write_text(one_turn_cases(CASES, question="other {i}"))
    with pytest.raises(EvalrelayError, match="changed since it was queued as campaign"):
        plan_dropped(record, inbox, InboxTrust())


def test_configuration_inside_the_inbox_is_refused_unless_trusted(inbox: Inbox) -> None:
    """A targets file put in the inbox after the file was queued would redefine its target;
    the watcher plans with the operator's only, and refuses the file rather than pass it
    over."""
    record = queued_record(inbox, "geo.yaml", "queued/geo.yaml", one_turn_cases(CASES))
    (inbox.root / "targets.yaml").write_text(
        "targets:\n  - {name: main, provider: cli, command: [touch, pwned]}\n"
    )
    with pytest.raises(InvalidFileError, match=r"targets\.yaml in the inbox would configure"):
        plan_dropped(record, inbox, InboxTrust())
    _, jobs = plan_dropped(record, inbox, InboxTrust(inbox_config=True))
    assert {j.target.kind for j in jobs} == {"cli"}


def test_code_evaluators_are_refused_unless_allowed(inbox: Inbox, tmp_path: Path) -> None:
    text = (
        "evalcases:\n  - id: runs-code\n    input_messages: [{role: user, content: hi}]\n"
        f"    evaluators: [{{type: code, script: [touch, '{tmp_path / 'ran'}']}}]\n"
    )
    record = queued_record(inbox, "code.yaml", "queued/code.yaml", text, total=1)
    with pytest.raises(InvalidFileError, match="files dropped in the inbox may not run code"):
        plan_dropped(record, inbox, InboxTrust())
    _, jobs = plan_dropped(record, inbox, InboxTrust(allow_code=True))
    assert len(jobs) == 1


def test_a_file_that_now_gives_other_jobs_is_refused(inbox: Inbox) -> None:
    record = queued_record(inbox, "geo.yaml", "queued/geo.yaml", one_turn_cases(CASES), 9)
    with pytest.raises(EvalrelayError, match=r"had 9 jobs; .* now gives 4"):
        plan_dropped(record, inbox, InboxTrust())


def test_a_record_naming_a_file_outside_queued_is_refused(inbox: Inbox) -> None:
    record = queued_record(inbox, "geo.yaml", "queued/geo.yaml", one_turn_cases(CASES))
    assert record.dropped is not None
    (inbox.root / "geo.yaml").write_text(one_turn_cases(CASES))
    for elsewhere in ("geo.yaml", "queued/../geo.yaml", "done/geo.yaml"):
        moved = record.model_copy(
            update={"dropped": record.dropped.model_copy(update={"queued": elsewhere})}
        )
        with pytest.raises(EvalrelayError, match="not a file in"):
            plan_dropped(moved, inbox, InboxTrust())

"""The wire job: what a worker reads of it is what was planned."""

from __future__ import annotations

from evalrelay.bridge.contract.job import Job
from tests.conftest import direct_job


def test_a_stored_job_leaves_out_its_defaults_and_reads_back_whole() -> None:
    job = direct_job()
    assert len(job.stored_json()) < len(job.model_dump_json()) * 0.7
    assert Job.model_validate_json(job.stored_json()) == job

"""The admission ledger: places held before the store, jobs counted until their ending."""

from __future__ import annotations

from herald.jobs.record import JobRecord
from herald.server.admission import Admission


def record(job_id: str, status: str) -> JobRecord:
    return JobRecord(
        job_id=job_id,
        tool="t",
        created_at="2026-12-02T00:00:00.000Z",
        updated_at="2026-12-02T00:00:00.000Z",
        status=status,
    )


def test_a_held_place_counts_at_once_and_becomes_the_job_until_it_ends() -> None:
    admission = Admission()
    place = admission.hold("peer:10.0.0.1")
    assert (admission.admitted("peer:10.0.0.1"), admission.waiting()) == (1, 1)
    admission.admit(place, "j1")
    admission.heard(record("j1", "pending"))
    assert (admission.admitted("peer:10.0.0.1"), admission.waiting()) == (1, 1)
    admission.heard(record("j1", "running"))
    assert (admission.admitted("peer:10.0.0.1"), admission.waiting()) == (1, 0)
    admission.heard(record("j1", "completed"))
    assert (admission.admitted("peer:10.0.0.1"), admission.waiting()) == (0, 0)


def test_a_failed_start_gives_its_place_back_and_other_jobs_count_only_as_waiting() -> None:
    admission = Admission()
    admission.release(admission.hold("sub-1"))
    assert (admission.admitted("sub-1"), admission.waiting()) == (0, 0)
    admission.heard(record("elsewhere", "pending"))  # another replica's job
    assert (admission.admitted("sub-1"), admission.waiting()) == (0, 1)
    admission.heard(record("elsewhere", "cancelled"))
    assert admission.waiting() == 0

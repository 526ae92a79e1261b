"""Who may start another job: the counts a start is checked against.

A start counts against who made it (`herald.server.jobs.admission_key`: a principal, else
a network address, else a session) and, while it waits, against every start together.
The counts are this process's view. The jobs of an owner and the waiting jobs are kept
from the job events it hears: with a shared store that is every replica's events, though
a job open when this process started counts from its next event. The jobs of a key are
the ones this process admitted.

A start holds its place synchronously, before it awaits the store, so a burst of starts
cannot all pass the check together; `admit` turns the place into the job, `release`
gives it back (the start failed, or the job ended).

Pure bookkeeping: no I/O.
"""

from __future__ import annotations

import itertools

from herald.jobs.record import JobRecord

__all__ = ["Admission"]


class Admission:
    """Jobs counted per admission key and jobs waiting, as this process has heard of them."""

    def __init__(self) -> None:
        #: Jobs waiting `pending`, as this process heard of them.
        self._waiting: set[str] = set()
        #: Owner -> its jobs that have not ended, as this process heard of them.
        self._open: dict[str, set[str]] = {}
        #: Admission key -> the jobs admitted for it that have not ended, and held places.
        self._admitted: dict[str, set[str]] = {}
        #: Job id or held place -> its admission key.
        self._key_of: dict[str, str] = {}
        self._places = itertools.count()
        self._held = 0

    def waiting(self) -> int:
        """Jobs waiting `pending`, plus starts under way here."""
        return len(self._waiting) + self._held

    def open_of(self, owner: str) -> int:
        """Jobs of `owner` this process has heard of that have not ended."""
        return len(self._open.get(owner, ()))

    def admitted(self, key: str) -> int:
        """Jobs admitted for `key` here that have not ended, or are being started."""
        return len(self._admitted.get(key, ()))

    def hold(self, key: str) -> str:
        """Count a start for `key` now; returns the place to `admit` or `release`."""
        place = f"held:{next(self._places)}"
        self._admitted.setdefault(key, set()).add(place)
        self._key_of[place] = key
        self._held += 1
        return place

    def admit(self, place: str, job_id: str) -> None:
        """The held `place` is now `job_id`, counted until its ending is heard.

        Called as soon as the job is created, before it is launched or queued, so its
        ending cannot have been heard yet.
        """
        key = self._key_of.pop(place)
        self._held -= 1
        self._admitted[key].discard(place)
        self._admitted[key].add(job_id)
        self._key_of[job_id] = key

    def release(self, place: str) -> None:
        """Stop counting `place`: a held place whose start failed, or a job that ended."""
        key = self._key_of.pop(place, None)
        if key is None:
            return
        if place.startswith("held:"):
            self._held -= 1
        admitted = self._admitted[key]
        admitted.discard(place)
        if not admitted:
            del self._admitted[key]

    def heard(self, job: JobRecord) -> None:
        """Follow a job's status from one of its events."""
        if job.status == "pending":
            self._waiting.add(job.job_id)
        else:
            self._waiting.discard(job.job_id)
        if job.terminal:
            self.release(job.job_id)
        if not job.owner:
            return
        if not job.terminal:
            self._open.setdefault(job.owner, set()).add(job.job_id)
        elif (open_jobs := self._open.get(job.owner)) is not None:
            open_jobs.discard(job.job_id)
            if not open_jobs:
                del self._open[job.owner]

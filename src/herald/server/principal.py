"""Who a request comes from, and who may see a job.

Every job, task and result belongs to a principal: with authentication, the subject of the
request's access token; without it, the handshake-era session that started the job (which
hears its events), or, for a 2026-07-28 request, nobody in particular, since it has no
session. Without authentication a job id is a capability: 128 random bits (see
`herald.jobs.service.JOB_ID_BYTES`) that whoever holds them may use, as the CLI does when it
follows a job from a new connection. With authentication, only the job's owner sees it,
and anyone else is told exactly what an unknown id would tell them.

Pure: no I/O.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller: who issued its token, for whom, and what it may do.

    `claims` are everything the verified token (or its introspection) said, for a tool that
    needs more than the subject (an email, a tenant); `token` is the access token itself,
    for a tool that calls another API on the caller's behalf (where that API accepts it,
    or to exchange it, RFC 8693). Neither takes part in comparing principals, and the
    token is never shown in a repr or a log.
    """

    issuer: str
    subject: str
    scopes: frozenset[str] = field(default_factory=frozenset)
    claims: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    token: str = field(default="", compare=False, repr=False)

    @property
    def owner(self) -> str:
        """The owner id of this principal's jobs: the same for every session and replica it uses,
        and not its subject, which the id is stored beside."""
        digest = hashlib.sha256(f"{self.issuer}\0{self.subject}".encode()).hexdigest()
        return f"sub-{digest[:32]}"


def signed_in(owner: str | None) -> bool:
    """Whether an owner id is a principal's (`Principal.owner`), not an anonymous session's."""
    return owner is not None and owner.startswith("sub-")


def viewer(principal: Principal | None) -> str | None:
    """Whose jobs a caller may see (`herald.runtime.Jobs.visible`): with authentication,
    its own; without (None), any whose id it knows."""
    return None if principal is None else principal.owner


def may_see(job_owner: str | None, principal: Principal | None) -> bool:
    """Whether a caller may see (read, follow, cancel) a job of `job_owner`.

    Without authentication the id alone is enough; with it, the job must be the caller's.
    """
    return principal is None or job_owner == principal.owner

"""The issuer's signing keys (its JWKS), kept, and fetched again without making requests wait.

The keys are found through the issuer's metadata (RFC 8414) unless `jwks_uri` is given,
and kept. Three rules keep an issuer that is slow, down or hanging from stalling the
server, and keep a stranger who sends made-up key ids (`kid`) from making it hammer the
issuer:

- A token whose key is in hand is checked at once. Keys older than `keys_ttl` are fetched
  again in the background, and the ones in hand serve until new ones arrive, or for as long
  as the issuer cannot give any.
- At most one fetch runs at a time, and a fetch begins at most once per
  `KEY_REFRESH_COOLDOWN`, whether the one before succeeded or failed. Within the cooldown a
  key not in hand is refused at once: 401 if the last fetch worked (the issuer does not
  publish it), 503 if it failed (the keys cannot be read now).
- A fetch as a whole (the metadata, then the keys) ends within `KEY_FETCH_DEADLINE`; only a
  token whose key is not in hand waits on it.

Fetches run in the verifier's task group (enter it with `async with`), so one that a
request stopped waiting for still finishes and serves the next request.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from typing import Any, Final, Self
from urllib.parse import urlsplit

import httpx
import jwt

from herald.auth.config import AuthConfig
from herald.auth.verifier import InvalidToken, IssuerUnreachable

#: Seconds from the start of one fetch of the keys to the earliest start of the next.
KEY_REFRESH_COOLDOWN: Final = 30.0
#: Seconds a fetch of the metadata and keys may take in all, however many URLs it tries.
KEY_FETCH_DEADLINE: Final = 5.0


class IssuerKeys:
    def __init__(
        self,
        config: AuthConfig,
        http: httpx.AsyncClient,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self._http = http
        self._clock = clock
        self._keys: jwt.PyJWKSet | None = None
        self._fetched_at = -math.inf
        self._attempted_at = -math.inf
        #: Why the last fetch failed; None once one has succeeded since.
        self._failure: str | None = None
        self._fetch: asyncio.Task[None] | None = None
        self._tasks: asyncio.TaskGroup | None = None

    async def __aenter__(self) -> Self:
        tasks = asyncio.TaskGroup()
        await tasks.__aenter__()
        self._tasks = tasks
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        tasks, self._tasks = self._tasks, None
        if self._fetch is not None:
            self._fetch.cancel()
        if tasks is not None:
            await tasks.__aexit__(None, None, None)

    async def key(self, key_id: Any) -> jwt.PyJWK:
        """The key `key_id` names (the only key, if it names none and there is one)."""
        found = self._in_hand(key_id)
        if found is not None:
            if self._clock() - self._fetched_at >= self.config.keys_ttl:
                self._start_fetch()  # in the background: the key in hand serves meanwhile
            return found
        fetch = self._start_fetch()
        if fetch is not None:
            # asyncio.wait, unlike awaiting the task, leaves the fetch running for the
            # others if this request is cancelled; the fetch ends by its deadline.
            await asyncio.wait([fetch])
            found = self._in_hand(key_id)
            if found is not None:
                return found
        if self._failure is not None:
            raise IssuerUnreachable(self._failure)
        raise InvalidToken(f"the token names key {key_id!r}, which the issuer does not publish")

    def _in_hand(self, key_id: Any) -> jwt.PyJWK | None:
        if self._keys is None:
            return None
        if key_id is None:  # one key: a token may omit `kid`
            return self._keys.keys[0] if len(self._keys.keys) == 1 else None
        return next((key for key in self._keys.keys if key.key_id == key_id), None)

    def _start_fetch(self) -> asyncio.Task[None] | None:
        """The fetch under way, else a new one unless the cooldown forbids it (then None)."""
        if self._fetch is not None and not self._fetch.done():
            return self._fetch
        if self._clock() - self._attempted_at < KEY_REFRESH_COOLDOWN:
            return None
        if self._tasks is None:
            raise RuntimeError("use the verifier in `async with` before checking tokens")
        self._attempted_at = self._clock()
        self._fetch = self._tasks.create_task(self._fetch_keys())
        return self._fetch

    async def _fetch_keys(self) -> None:
        """Fetch the keys; on failure keep the ones in hand and say why (never raises)."""
        try:
            async with asyncio.timeout(KEY_FETCH_DEADLINE):
                uri = self.config.jwks_uri or await self._discover_jwks_uri()
                document = await get_json(self._http, uri)
        except TimeoutError:
            self._failure = (
                f"the issuer {self.config.issuer} did not give its keys within {KEY_FETCH_DEADLINE:g} s"
            )
            return
        except IssuerUnreachable as why:
            self._failure = str(why)
            return
        try:
            keys = jwt.PyJWKSet.from_dict(document)
        except jwt.PyJWTError as bad:
            self._failure = f"the issuer's keys at {uri} are not a key set: {bad}"
            return
        self._keys, self._fetched_at, self._failure = keys, self._clock(), None

    async def _discover_jwks_uri(self) -> str:
        for url in metadata_urls(self.config.issuer):
            try:
                document = await get_json(self._http, url)
            except IssuerUnreachable:
                continue
            if document.get("issuer") == self.config.issuer and isinstance(document.get("jwks_uri"), str):
                return str(document["jwks_uri"])
        raise IssuerUnreachable(f"no metadata with a jwks_uri for {self.config.issuer}")


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be (RFC 8414 §3 inserts the well-known part before the path)."""
    parts = urlsplit(issuer)
    base = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    return [
        f"{base}/.well-known/oauth-authorization-server{path}",
        f"{base}/.well-known/openid-configuration{path}",
        f"{issuer.rstrip('/')}/.well-known/openid-configuration",
    ]


async def get_json(http: httpx.AsyncClient, url: str) -> dict[str, Any]:
    try:
        response = await http.get(url)
        document = response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, httpx.InvalidURL, ValueError) as failed:
        raise IssuerUnreachable(f"{url} did not answer: {failed}") from None
    if not isinstance(document, dict):
        raise IssuerUnreachable(f"{url} answered {response.status_code}, not a JSON object")
    return document

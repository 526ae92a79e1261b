"""GiftGenius as an OAuth 2.1 resource server: a real authorization server (`issuer.py`), a real
`giftgenius serve --auth-issuer …`, and the official Python SDK client.

The SDK finds the authorization server through the server's 401 and its protected
resource metadata, gets a token by the client_credentials grant, and runs a bulk job end to
end. Every kind of bad token is refused with the challenge the spec asks for, a token
without a tool's scope gets 403 `insufficient_scope`, and one principal cannot see, follow,
cancel or read another's job: it is told what an unknown id would tell it.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from herald.auth.keys import KEY_FETCH_DEADLINE
from herald.testing import free_port, wait_until_listening
from tests.auth.issuer import Issuer, new_key
from tests.messages import INITIALIZE, POST_HEADERS
from tests.servers import REPO

pytestmark = pytest.mark.slow  # a GiftGenius process and an authorization server per test

TIMEOUT = 60.0
USE, BULK = "giftgenius:use", "giftgenius:bulk"
CSV = "name,department,interests,budget\nAna,Eng,hiking;coffee,40\nBo,Ops,board games,60\n"
HEADERS = POST_HEADERS
#: Seconds within which a request that waits on no issuer is answered by a fresh server on a
#: busy machine: generous, where a stalled one waits 30 s.
SOON = 10.0


@dataclass
class Protected:
    issuer: Issuer
    url: str

    @property
    def metadata_url(self) -> str:
        return self.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")

    def token(self, subject: str = "alice", scopes: set[str] | None = None, **changes: Any) -> str:
        granted = {USE, BULK} if scopes is None else scopes
        return self.issuer.mint(audience=self.url, subject=subject, scopes=granted, **changes)


@contextmanager
def giftgenius(issuer: Issuer, *options: str) -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    argv = [sys.executable, "-m", "giftgenius", "serve", "--quiet", "--store", "memory", "--port", str(port)]
    argv += ["--auth-issuer", issuer.url, "--auth-audience", url, "--auth-scope", USE, *options]
    process = subprocess.Popen(argv, cwd=REPO)
    try:
        wait_until_listening(port, process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=15)


@pytest.fixture
async def protected() -> AsyncIterator[Protected]:
    issuer = Issuer()
    issuer.register("bulk-client", "s3cret", {USE, BULK})
    issuer.register("reader-client", "r3ader", {USE})
    async with issuer.serving():
        with giftgenius(issuer) as url:
            yield Protected(issuer, url)


async def post(url: str, body: Any, token: str | None = None, **headers: str) -> httpx.Response:
    sent = {**HEADERS, **headers} | ({"authorization": f"Bearer {token}"} if token else {})
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        return await http.post(url, json=body, headers=sent)


# -- discovery and refusals ---------------------------------------------------------------------------


async def test_the_resource_metadata_names_the_issuer(protected: Protected) -> None:
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        for url in (
            protected.metadata_url,
            protected.url.replace("/mcp", "/.well-known/oauth-protected-resource"),
        ):
            document = (await http.get(url)).json()
            assert document == {
                "resource": protected.url,
                "authorization_servers": [protected.issuer.url],
                "scopes_supported": [BULK, USE],
                "bearer_methods_supported": ["header"],
                "resource_name": "GiftGenius",
            }


async def test_no_token_is_401_with_where_to_get_one(protected: Protected) -> None:
    answer = await post(protected.url, INITIALIZE)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == (
        f'Bearer scope="{USE}", resource_metadata="{protected.metadata_url}"'
    ), "no error code when no token was sent (RFC 6750 §3.1)"
    assert "access token" in answer.json()["error"]["message"]


BAD_TOKENS: dict[str, dict[str, Any]] = {
    "expired": {"lifetime": -120},
    "for another resource": {"audience": "http://127.0.0.1:1/mcp"},
    "from another issuer": {"issuer": "http://127.0.0.1:2"},
    "signed with another key": {"key": new_key()},
    "alg none": {"algorithm": "none"},
    "an unknown key id": {"key_id": "key-9"},
    "an HMAC, not the issuer's signature": {
        "algorithm": "HS256",
        "key": "a-shared-secret-of-32-bytes-or-more",
    },
}


@pytest.mark.parametrize("bad", list(BAD_TOKENS))
async def test_bad_tokens_are_401_invalid_token(protected: Protected, bad: str) -> None:
    changes = dict(BAD_TOKENS[bad])
    audience = changes.pop("audience", protected.url)
    token = protected.issuer.mint(audience=audience, scopes={USE, BULK}, **changes)
    answer = await post(protected.url, INITIALIZE, token)
    assert answer.status_code == 401, (bad, answer.text)
    challenge = answer.headers["www-authenticate"]
    assert challenge.startswith('Bearer error="invalid_token", error_description="')
    assert f'resource_metadata="{protected.metadata_url}"' in challenge
    assert answer.json()["error"]["message"].startswith("Unauthorized: ")


#: Tokens the issuer signed whose claims are of the wrong type, and what the refusal says.
WRONG_CLAIMS: dict[str, tuple[dict[str, Any], str]] = {
    "scope a number": ({"scope": 5}, "the token's 'scope' claim is a number, not a string"),
    "scope a boolean": ({"scope": True}, "the token's 'scope' claim is a boolean, not a string"),
    "scp holding a number": ({"scope": None, "scp": [USE, 5]}, "the token's 'scp' claim holds a number"),
    "scp an object": ({"scope": None, "scp": {USE: True}}, "the token's 'scp' claim is an object"),
    "sub a number": ({"sub": 5}, "the token's 'sub' claim is a number, not a string"),
    "aud an object": ({"aud": {"resource": "x"}}, "the token's 'aud' claim is an object"),
    "aud holding a number": ({"aud": [5]}, "the token's 'aud' claim holds a number"),
    "exp a string": ({"exp": "soon"}, "(exp) must be an integer"),
}


@pytest.mark.parametrize("wrong", list(WRONG_CLAIMS))
async def test_claims_of_the_wrong_type_are_401_saying_which(protected: Protected, wrong: str) -> None:
    claims, said = WRONG_CLAIMS[wrong]
    answer = await post(protected.url, INITIALIZE, protected.token(**claims))
    assert answer.status_code == 401, (wrong, answer.text)
    challenge = answer.headers["www-authenticate"]
    assert challenge.startswith('Bearer error="invalid_token", error_description="'), challenge
    assert said in challenge, challenge


async def test_garbage_and_other_schemes(protected: Protected) -> None:
    assert (await post(protected.url, INITIALIZE, "not-a-jwt")).status_code == 401
    basic = await post(protected.url, INITIALIZE, authorization="Basic dXNlcjpwYXNz")
    assert basic.status_code == 400
    assert 'error="invalid_request"' in basic.headers["www-authenticate"]


async def test_a_token_without_the_servers_scope_is_403(protected: Protected) -> None:
    answer = await post(protected.url, INITIALIZE, protected.token(scopes=set()))
    assert answer.status_code == 403
    challenge = answer.headers["www-authenticate"]
    assert challenge.startswith('Bearer error="insufficient_scope"')
    assert f'scope="{USE}"' in challenge


async def test_a_tool_needs_its_own_scope(protected: Protected) -> None:
    reader = protected.token(scopes={USE})
    session = (await post(protected.url, INITIALIZE, reader)).headers["mcp-session-id"]
    headers = {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    await post(protected.url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, reader, **headers)
    listed = await post(protected.url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, reader, **headers)
    tools = {tool["name"]: tool for tool in listed.json()["result"]["tools"]}
    assert tools["start_bulk_gift_analysis"]["securitySchemes"] == [{"type": "oauth2", "scopes": [BULK, USE]}]
    assert tools["suggest_gifts"]["securitySchemes"] == [{"type": "oauth2", "scopes": [USE]}]
    assert tools["suggest_gifts"]["_meta"]["securitySchemes"] == tools["suggest_gifts"]["securitySchemes"]
    start = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "start_bulk_gift_analysis", "arguments": {"csv": CSV}},
    }
    refused = await post(protected.url, start, reader, **headers)
    assert refused.status_code == 403
    assert f'scope="{BULK} {USE}"' in refused.headers["www-authenticate"]
    suggest = {"occasion": "birthday", "budget": 40, "recipient": "a reader"}
    call = {
        "jsonrpc": "2.0",
        "id": 4,
        "method": "tools/call",
        "params": {"name": "suggest_gifts", "arguments": suggest},
    }
    assert "result" in (await post(protected.url, call, reader, **headers)).json()


async def test_the_issuers_keys_are_fetched_once(protected: Protected) -> None:
    for _ in range(5):
        assert (await post(protected.url, INITIALIZE, protected.token())).status_code == 200
    assert protected.issuer.jwks_fetches == 1


@pytest.mark.slow
async def test_a_hung_issuer_costs_one_fetch_and_then_prompt_503s() -> None:
    """An issuer that takes connections and answers nothing: the requests that came first wait
    on one fetch, until its deadline; the ones after it are told 503 at once, forged key ids
    or not, and ask the issuer nothing more within the cooldown."""
    issuer = Issuer()
    async with issuer.serving():
        issuer.hang()
        with giftgenius(issuer) as url:
            async with asyncio.timeout(KEY_FETCH_DEADLINE + SOON), asyncio.TaskGroup() as tasks:
                first = [
                    tasks.create_task(post(url, INITIALIZE, issuer.mint(audience=url))) for _ in range(3)
                ]
            assert [answer.status_code for answer in (task.result() for task in first)] == [503] * 3
            assert issuer.requests == 1
            for key_id in ("key-1", "forged-1", "forged-2"):
                async with asyncio.timeout(SOON):
                    answer = await post(url, INITIALIZE, issuer.mint(audience=url, key_id=key_id))
                assert answer.status_code == 503
                assert "did not give its keys within" in answer.json()["error"]["message"]
            assert issuer.requests == 1


# -- the official SDK, end to end ---------------------------------------------------------------------


class Memory:
    """The SDK's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


@asynccontextmanager
async def sdk_client(
    url: str, mode: str, auth: httpx2.Auth | None = None, token: str | None = None
) -> AsyncIterator[Client]:
    headers = {"authorization": f"Bearer {token}"} if token else None
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(TIMEOUT), auth=auth, headers=headers) as http,
        Client(
            streamable_http_client(url, http_client=http), mode=mode, read_timeout_seconds=TIMEOUT, cache=None
        ) as client,
    ):
        yield client


async def run_bulk_job(client: Client) -> dict[str, Any]:
    started = await client.call_tool("start_bulk_gift_analysis", {"csv": CSV})
    assert started.structured_content is not None, started
    job_id = started.structured_content["jobId"]
    async with asyncio.timeout(TIMEOUT):
        while True:
            status = (await client.call_tool("get_job_status", {"jobId": job_id})).structured_content
            assert status is not None
            if status["pollAfterMs"] is None:
                break
            await asyncio.sleep(status["pollAfterMs"] / 1000)
    assert status["status"] == "completed", status
    read = await client.read_resource(status["resultResourceId"])
    document: dict[str, Any] = json.loads(read.contents[0].text)  # type: ignore[union-attr]
    assert [person["name"] for person in document["people"]] == ["Ana", "Bo"]
    done: dict[str, Any] = status
    return done


async def test_the_sdk_gets_a_token_by_itself_and_runs_a_bulk_job(protected: Protected) -> None:
    provider = ClientCredentialsOAuthProvider(
        server_url=protected.url,
        storage=Memory(),
        client_id="bulk-client",
        client_secret="s3cret",
        scope=f"{USE} {BULK}",
        issuer=protected.issuer.url,
    )
    async with sdk_client(protected.url, "legacy", auth=provider) as client:
        await run_bulk_job(client)


async def test_a_bearer_token_in_2026_07_28(protected: Protected) -> None:
    async with sdk_client(protected.url, "auto", token=protected.token()) as client:
        assert client.protocol_version == "2026-07-28"
        await run_bulk_job(client)


# -- one principal's jobs are not another's ----------------------------------------------------------


async def test_another_principal_is_told_the_job_does_not_exist(protected: Protected) -> None:
    async with sdk_client(protected.url, "legacy", token=protected.token("alice")) as alice:
        status = await run_bulk_job(alice)
    job_id, nobody = status["jobId"], "0" * 32
    result = status["resultResourceId"]

    async def refusal(call: Any) -> str:
        """What the server says: an error result's text, or a protocol error's message."""
        try:
            answer = await call
        except Exception as error:
            return str(error)
        assert answer.is_error, answer
        return str(answer.content[0].text)

    async with sdk_client(protected.url, "legacy", token=protected.token("mallory")) as mallory:
        for tool in ("get_job_status", "cancel_job"):
            hidden = await refusal(mallory.call_tool(tool, {"jobId": job_id}))
            missing = await refusal(mallory.call_tool(tool, {"jobId": nobody}))
            assert "Unknown job" in hidden, hidden
            assert hidden.replace(job_id, "ID") == missing.replace(nobody, "ID"), (
                "the same as for no job at all"
            )
        hidden = await refusal(mallory.read_resource(result))
        missing = await refusal(mallory.read_resource(result.replace(job_id, nobody)))
        assert hidden.replace(job_id, "ID") == missing.replace(nobody, "ID")
    async with sdk_client(protected.url, "legacy", token=protected.token("alice")) as alice:
        assert (await alice.call_tool("get_job_status", {"jobId": job_id})).structured_content is not None


async def test_a_session_answers_only_its_own_principal(protected: Protected) -> None:
    session = (await post(protected.url, INITIALIZE, protected.token("alice"))).headers["mcp-session-id"]
    headers = {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    assert (await post(protected.url, ping, protected.token("alice"), **headers)).status_code == 200
    taken = await post(protected.url, ping, protected.token("mallory"), **headers)
    assert taken.status_code == 404, "another principal's session is an unknown one"


async def test_listen_for_my_jobs_hears_only_mine(protected: Protected) -> None:
    """Authenticated, `{"io.herald/jobEvents": true}` means this principal's jobs, and only those."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    modern: dict[str, str] = {"mcp-protocol-version": "2026-07-28"}

    async def start(token: str) -> str:
        params = {"name": "start_bulk_gift_analysis", "arguments": {"csv": CSV}, "_meta": meta}
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
        headers = {**modern, "mcp-method": "tools/call", "mcp-name": "start_bulk_gift_analysis"}
        answer = await post(protected.url, call, token, **headers)
        job_id: str = answer.json()["result"]["structuredContent"]["jobId"]
        return job_id

    listen = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "subscriptions/listen",
        "params": {"notifications": {"io.herald/jobEvents": True}, "_meta": meta},
    }
    alice = protected.token("alice")
    headers = {**HEADERS, **modern, "mcp-method": "subscriptions/listen", "authorization": f"Bearer {alice}"}
    heard: list[dict[str, Any]] = []
    async with (
        httpx.AsyncClient(timeout=TIMEOUT) as http,
        http.stream("POST", protected.url, json=listen, headers=headers) as stream,
    ):
        lines = stream.aiter_lines()
        async with asyncio.timeout(TIMEOUT):
            async for line in lines:
                if line.startswith("data:") and line.removeprefix("data:").strip():
                    ack = json.loads(line.removeprefix("data:"))
                    assert ack["params"]["notifications"] == {"io.herald/jobEvents": True}
                    break
            theirs = await start(protected.token("mallory"))
            mine = await start(alice)
            async for line in lines:
                if line.startswith("data:") and line.removeprefix("data:").strip():
                    heard.append(json.loads(line.removeprefix("data:"))["params"])
                    if heard[-1]["type"] == "job.completed" and heard[-1]["jobId"] == mine:
                        break
    assert {event["jobId"] for event in heard} == {mine}, f"nothing of {theirs}"


async def test_opaque_tokens_by_introspection(protected: Protected) -> None:
    """A server that asks the issuer about each token (RFC 7662) instead of reading it."""
    issuer = protected.issuer
    issuer.register("gifts-server", "introspector", set())
    introspection = ["--auth-introspection", f"{issuer.url}/introspect", "--auth-client-id", "gifts-server"]
    introspection += ["--auth-client-secret", "introspector"]
    with giftgenius(issuer, *introspection) as url:
        good = issuer.mint(audience=url, scopes={USE, BULK})
        assert (await post(url, INITIALIZE, good)).status_code == 200
        expired = await post(url, INITIALIZE, issuer.mint(audience=url, scopes={USE}, lifetime=-120))
        assert expired.status_code == 401
        assert "not active" in expired.headers["www-authenticate"]
        elsewhere = await post(url, INITIALIZE, issuer.mint(audience="http://127.0.0.1:1/mcp", scopes={USE}))
        assert elsewhere.status_code == 401
        assert "another resource" in elsewhere.headers["www-authenticate"]
        for claims, said in (
            ({"scope": 5}, "'scope' claim is a number"),
            ({"aud": {url: True}}, "'aud' claim is an object"),  # not the keys of an object
            ({"scope": None, "scp": [USE, None]}, "'scp' claim holds null"),
        ):
            wrong = await post(url, INITIALIZE, issuer.mint(audience=url, scopes={USE}, **claims))
            assert wrong.status_code == 401, (claims, wrong.text)
            assert said in wrong.headers["www-authenticate"]

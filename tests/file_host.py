"""A file host as ChatGPT's is to a server: HTTPS with its own certificate, links to download
attached files from, and the ways such links fail (expired, redirected, too large, slow)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import socket
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import Route


def own_address() -> str | None:
    """This machine's address on its network (not loopback), or None where it has none."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))  # a route is chosen; nothing is sent
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return None if ipaddress.ip_address(address).is_loopback else address


def certificate(folder: Path, addresses: list[str]) -> tuple[Path, Path]:
    """A self-signed certificate for `addresses`, and its key, as PEM files in `folder`."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "file host")])
    now = datetime.datetime.now(datetime.UTC)
    names = [x509.IPAddress(ipaddress.ip_address(address)) for address in addresses]
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "host.pem", folder / "host.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_file, key_file


@dataclass
class FileHost:
    port: int
    trust: ssl.SSLContext
    #: This machine's network address, where it has one (for links that are not loopback).
    address: str | None

    def link(self, path: str, host: str = "127.0.0.1") -> str:
        return f"https://{host}:{self.port}{path}"


@contextlib.asynccontextmanager
async def file_host(folder: Path, files: dict[str, bytes]) -> AsyncIterator[FileHost]:
    """Serve `files` at `/files/NAME` over HTTPS on every interface, until the block ends.

    Besides: `/expired` (403, as a link past its time), `/home?to=PATH` (a redirect to
    127.0.0.1), `/trickle` (a byte now and then, for ever), `/endless` (no length, never
    done sending).
    """
    import uvicorn

    address = own_address()
    cert_file, key_file = certificate(folder, ["127.0.0.1", *([address] if address else [])])

    async def served(request: Request) -> Response:
        found = files.get(request.path_params["name"])
        return Response(found, media_type="text/csv") if found is not None else Response(status_code=404)

    async def expired(request: Request) -> Response:
        return Response("Signature expired", status_code=403)

    async def home(request: Request) -> Response:
        return RedirectResponse(f"https://127.0.0.1:{port}{request.query_params['to']}", status_code=302)

    async def trickle(request: Request) -> Response:
        async def body() -> AsyncIterator[bytes]:
            while True:
                yield b"x"
                await asyncio.sleep(0.2)

        return StreamingResponse(body(), media_type="text/csv")

    async def endless(request: Request) -> Response:
        async def body() -> AsyncIterator[bytes]:
            while True:
                yield b"name,interests\n" * 1024
                await asyncio.sleep(0)

        return StreamingResponse(body(), media_type="text/csv")

    app = Starlette(
        routes=[
            Route("/files/{name}", served),
            Route("/expired", expired),
            Route("/home", home),
            Route("/trickle", trickle),
            Route("/endless", endless),
        ]
    )
    config = uvicorn.Config(
        app,
        host="0.0.0.0",
        port=0,
        ssl_certfile=str(cert_file),
        ssl_keyfile=str(key_file),
        log_level="warning",
        lifespan="off",
    )
    server = uvicorn.Server(config)
    serving = asyncio.ensure_future(server.serve())
    try:
        async with asyncio.timeout(20):
            while not server.started:  # noqa: ASYNC110 - uvicorn offers readiness only as a flag
                await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield FileHost(port, ssl.create_default_context(cafile=str(cert_file)), address)
    finally:
        server.should_exit = True
        await asyncio.wait_for(serving, 20)

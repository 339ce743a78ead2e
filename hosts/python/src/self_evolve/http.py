"""The http capability: POST to endpoints the host named, nothing else. The host owns the URL
and the credential (read from its own environment); the plugin sees status and body.

Policy is the Rust host's (`host-test/src/caps/http.rs`): a plain absolute path, no header that
carries credentials or framing, the deadline clamped to the endpoint's cap, a 1 MiB body cap
(past it the call fails with `network`, as ureq's `BodyExceedsLimit` does), redirects returned
as they are. The plugin calls synchronously from inside a wasm import, so this is one blocking
request with the standard library's `http.client`.
"""
from __future__ import annotations

import http.client
import os
import re
import socket
import ssl
import threading
import time
from dataclasses import dataclass, fields
from typing import Mapping, Optional, Union
from urllib.parse import urlsplit

from .types import HttpError, HttpRequest, HttpResponse

#: Headers the plugin may never set: credentials, routing and framing are the host's.
FORBIDDEN_HEADERS = frozenset([
    "authorization", "proxy-authorization", "cookie", "host", "content-length",
    "transfer-encoding", "connection", "x-api-key", "api-key",
])
#: Largest response body passed to the plugin (a body of exactly this size is allowed).
MAX_RESPONSE_BYTES = 1 << 20
DEFAULT_AUTH_HEADER = "authorization"
DEFAULT_AUTH_PREFIX = "Bearer "
DEFAULT_MAX_TIMEOUT_MS = 30_000

_HEADER_NAME = re.compile(r"[A-Za-z0-9_-]+")
_READ_CHUNK = 64 * 1024


@dataclass
class Endpoint:
    """One named endpoint. `url` is the base; the request's path is appended to it."""

    url: str
    #: Environment variable holding the credential; None for endpoints that need none.
    credential_env: Optional[str] = None
    auth_header: Optional[str] = None  # None: "authorization"
    auth_prefix: Optional[str] = None  # None: "Bearer " ("" is kept: a bare key)
    max_timeout_ms: Optional[int] = None  # None: 30000

    @property
    def header(self) -> str:
        return self.auth_header or DEFAULT_AUTH_HEADER

    @property
    def prefix(self) -> str:
        return DEFAULT_AUTH_PREFIX if self.auth_prefix is None else self.auth_prefix

    @property
    def cap_ms(self) -> int:
        return self.max_timeout_ms or DEFAULT_MAX_TIMEOUT_MS

    def credential(self) -> Optional[str]:
        """The secret, or None when unset or blank (blank counts as missing, as in Rust)."""
        if not self.credential_env:
            return None
        value = os.environ.get(self.credential_env)
        return value if value and value.strip() else None


# Both spellings, so a Node-style config (credentialEnv, ...) works unchanged.
_CAMEL = {"credentialEnv": "credential_env", "authHeader": "auth_header", "authPrefix": "auth_prefix",
          "maxTimeoutMs": "max_timeout_ms"}
_FIELDS = frozenset(f.name for f in fields(Endpoint))


def endpoint_of(value: Union[Endpoint, Mapping]) -> Endpoint:
    """An `Endpoint` from itself or a plain dict. Unknown keys are an error: a misspelt
    `credentialEnv` would otherwise send requests without the credential."""
    if isinstance(value, Endpoint):
        return value
    kwargs = {}
    for key, v in dict(value).items():
        name = _CAMEL.get(key, key)
        if name not in _FIELDS:
            raise ValueError(f"unknown endpoint key {key!r}")
        kwargs[name] = v
    return Endpoint(**kwargs)


class HttpCap:
    """The `http` interface over a fixed map of named endpoints."""

    def __init__(self, endpoints: Optional[Mapping[str, Union[Endpoint, Mapping]]] = None):
        # A plain dict of str keys: `constructor` or `__proto__` are only names nobody configured.
        self.endpoints = {str(name): endpoint_of(e) for name, e in (endpoints or {}).items()}

    def has_endpoint(self, name: str) -> bool:
        return name in self.endpoints

    def has_credential(self, name: str) -> bool:
        """True when the endpoint needs no credential or its variable is set. Never the value."""
        endpoint = self.endpoints.get(name)
        if endpoint is None:
            return False
        return not endpoint.credential_env or endpoint.credential() is not None

    def post(self, req: HttpRequest) -> HttpResponse:
        """One POST. Raises `HttpError` only; nothing leaves the host unless every check passed."""
        endpoint = self.endpoints.get(req.endpoint)
        if endpoint is None:
            raise HttpError("denied")
        check_path(req.path)
        headers = [check_header(endpoint, name, value) for name, value in req.headers]
        secret = None
        if endpoint.credential_env:
            secret = endpoint.credential()
            if secret is None:
                raise HttpError("no-credential")
            headers.append((endpoint.header, f"{endpoint.prefix}{secret}"))
        timeout_ms = max(1, min(int(req.timeout_ms), endpoint.cap_ms))
        url = endpoint.url.rstrip("/") + req.path
        try:
            return _exchange(url, headers, bytes(req.body), timeout_ms / 1000)
        except HttpError:
            raise
        except (TimeoutError, socket.timeout):  # socket.timeout is no TimeoutError before 3.10
            raise HttpError("timeout") from None
        except Exception as e:  # noqa: BLE001 - every failure is the plugin's `network`
            # `from None`: the original exception keeps its unscrubbed text; do not chain it along.
            raise HttpError("network", _scrub(_describe(e), secret)) from None


def check_path(path: str) -> None:
    """A plain absolute path such as /v1/decide: it cannot leave the endpoint's host or base."""
    ok = (
        path.startswith("/")
        and not path.startswith("//")
        and ".." not in path
        # `%2e%2e` is `..` to many servers and URL parsers (Node's resolves it before sending).
        and "%2e" not in path.lower()
        and "#" not in path
        and "@" not in path
        and "\\" not in path
        # Printable ASCII only, as in Rust and Node: no space or control, and nothing non-ASCII
        # (`/café`, a BOM), which each host's client would otherwise send differently.
        and all("\x21" <= c <= "\x7e" for c in path)
    )
    if not ok:
        raise HttpError("denied")


def check_header(endpoint: Endpoint, name: str, value: str) -> tuple:
    """The header as it will be sent, or `denied`: reserved names, malformed names, and values
    that could inject another header line."""
    lower = name.lower()
    if lower in FORBIDDEN_HEADERS or lower == endpoint.header.lower():
        raise HttpError("denied")
    if not _HEADER_NAME.fullmatch(name) or any(c in "\r\n\0" for c in value):
        raise HttpError("denied")
    return name, value


def _exchange(url: str, headers: list, body: bytes, timeout_s: float) -> HttpResponse:
    """Send the request and read the answer within one overall deadline (as ureq's
    `timeout_global`), not a per-read timeout a trickling server could stretch: every read is
    armed with what is left, and a watchdog shuts the socket down at the deadline, because one
    http.client read (a status line, a header, a chunk-size line) may be many `recv`s."""
    deadline = time.monotonic() + timeout_s
    conn, target = _connection(url, timeout_s)
    response = None
    fired = threading.Event()
    sockets: list = []

    def expire() -> None:
        fired.set()
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    # http.client closes the socket as soon as a head says `Connection: close` (and from 3.13
    # the socket object with it), while the body is still to be read with the deadline re-armed:
    # the socket is closed here, in `finally`, instead.
    close = conn.close
    conn.close = lambda: None  # type: ignore[method-assign]
    watchdog = threading.Timer(timeout_s, expire)
    watchdog.daemon = True
    watchdog.start()
    try:
        conn.putrequest("POST", target, skip_accept_encoding=True)
        for name, value in headers:
            conn.putheader(name, _header_value(value))
        conn.putheader("Content-Length", str(len(body)))
        if conn.sock is None:
            conn.connect()  # within the timeout per address; DNS has none (as http.client)
        sock = conn.sock
        sockets.append(sock)
        if fired.is_set():
            raise TimeoutError("deadline passed")
        conn.endheaders(body)
        _arm(sock, deadline)
        response = conn.getresponse()  # a 3xx is returned as is: http.client never redirects
        data = _read_capped(response, sock, deadline)
        if fired.is_set():  # a body cut short by the watchdog is not an answer
            raise TimeoutError("deadline passed")
        return HttpResponse(status=response.status, body=data)
    except Exception:
        if fired.is_set():
            raise TimeoutError("deadline passed") from None
        raise
    finally:
        watchdog.cancel()
        # The response holds the socket after conn lets go of it; a body left unread (past the
        # cap) would keep it open until garbage collection.
        if response is not None:
            response.close()
        close()


def _connection(url: str, timeout_s: float) -> tuple:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"unsupported endpoint URL scheme or host: {parts.scheme}://{parts.hostname or ''}")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if parts.scheme == "https":
        conn = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=timeout_s,
                                           context=ssl.create_default_context())
    else:
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout_s)
    return conn, target


def _header_value(value: str) -> bytes:
    """UTF-8 on the wire, as ureq sends a &str. Other control characters are refused by ureq
    when it builds the request (a `network` error, nothing sent); the same here."""
    if any((ord(c) < 0x20 and c != "\t") or c == "\x7f" for c in value):
        raise ValueError("invalid header value")
    return value.encode("utf-8")


def _arm(sock, deadline: float) -> None:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError("deadline passed")
    sock.settimeout(remaining)


def _read_capped(response: http.client.HTTPResponse, sock, deadline: float) -> bytes:
    """The body, up to MAX_RESPONSE_BYTES. One byte more fails the call, as in Rust: the
    plugin never sees a silently truncated JSON document."""
    data = bytearray()
    while True:
        _arm(sock, deadline)
        chunk = response.read1(_READ_CHUNK)
        if not chunk:
            return bytes(data)
        data += chunk
        if len(data) > MAX_RESPONSE_BYTES:
            raise ValueError(f"the response body is larger than request limit: {MAX_RESPONSE_BYTES}")


def _describe(e: BaseException) -> str:
    text = str(e)
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _scrub(message: str, secret: Optional[str]) -> str:
    # No library message should hold the secret, but the plugin must never see it even if one does.
    return message.replace(secret, "[credential]") if secret else message

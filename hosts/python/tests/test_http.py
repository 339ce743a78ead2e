"""The http capability against real servers on 127.0.0.1: only named endpoints, the credential
reaches the server and never the plugin, denied requests never leave the host, deadlines and
the body cap hold. Also the scripted gate server used by replays."""
from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from self_evolve import http as http_mod
from self_evolve.gate_server import serve_gate_replies
from self_evolve.http import FORBIDDEN_HEADERS, MAX_RESPONSE_BYTES, Endpoint, HttpCap
from self_evolve.types import HttpError, HttpRequest

SECRET = "sk-py-secret-271828"


@pytest.fixture
def secret_env(monkeypatch):
    monkeypatch.setenv("SE_PY_GATE_KEY", SECRET)
    monkeypatch.delenv("SE_PY_UNSET", raising=False)


@pytest.fixture
def gate(tmp_path):
    """A gate server from a list of replies; yields (server, recorded-requests reader)."""
    servers = []

    def start(replies):
        replies_file, record_file = tmp_path / "replies.json", tmp_path / "requests.jsonl"
        replies_file.write_text(json.dumps(replies))
        server = serve_gate_replies(str(replies_file), str(record_file))
        servers.append(server)

        def seen():
            if not record_file.exists():
                return []
            return [json.loads(line) for line in record_file.read_text().splitlines()]

        return server, seen

    yield start
    for server in servers:
        server.stop()


@contextlib.contextmanager
def serve(respond):
    """A one-off server whose handler is `respond(handler)`; yields (url, request counter)."""
    count = [0]

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            count[0] += 1
            self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                respond(self)
            except OSError:
                pass  # the client gave up: what the timeout tests want

        def log_message(self, *args):
            pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True

    server = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", count
    finally:
        server.shutdown()
        server.server_close()


def request(endpoint="gate", path="/choice", headers=None, body=b'{"q":1}', timeout_ms=5000):
    return HttpRequest(endpoint=endpoint, path=path, headers=list(headers or [("content-type", "application/json")]),
                       body=body, timeout_ms=timeout_ms)


def denied(cap, req):
    with pytest.raises(HttpError) as err:
        cap.post(req)
    return err.value.tag


# -- endpoints and credentials ------------------------------------------------------------------

def test_named_endpoints_only(gate):
    server, _ = gate([{"status": 200}])
    cap = HttpCap({"gate": Endpoint(url=server.url)})
    for name in ["elsewhere", "constructor", "__proto__", "toString", ""]:
        assert cap.has_endpoint(name) is False, name
        assert cap.has_credential(name) is False, name
        assert denied(cap, request(endpoint=name)) == "denied", name
    assert server.requests == 0
    assert cap.has_endpoint("gate")


def test_endpoints_may_be_plain_dicts_in_either_spelling():
    cap = HttpCap({"a": {"url": "http://x", "credentialEnv": "K", "authHeader": "x-k", "authPrefix": "",
                         "maxTimeoutMs": 5},
                   "b": {"url": "http://y", "credential_env": "K", "max_timeout_ms": 7}})
    a, b = cap.endpoints["a"], cap.endpoints["b"]
    assert (a.credential_env, a.header, a.prefix, a.cap_ms) == ("K", "x-k", "", 5)
    assert (b.credential_env, b.header, b.prefix, b.cap_ms) == ("K", "authorization", "Bearer ", 7)
    assert HttpCap().endpoints == {}
    with pytest.raises(ValueError):
        HttpCap({"c": {"url": "http://z", "credentialenv": "K"}})  # a typo must not drop the credential


def test_credential_reaches_server_never_plugin(gate, secret_env):
    server, seen = gate([{"status": 200, "body": {"choice": "yes"}}, {"status": 503}])
    cap = HttpCap({"gate": {"url": server.url, "credentialEnv": "SE_PY_GATE_KEY"}})
    response = cap.post(request())
    assert response.status == 200
    assert response.body == b'{"choice":"yes"}'
    assert SECRET.encode() not in response.body
    assert cap.post(request()).status == 503
    first = seen()[0]
    assert first["headers"]["authorization"] == f"Bearer {SECRET}"
    assert first["headers"]["content-type"] == "application/json"
    assert (first["method"], first["path"], first["body"]) == ("POST", "/choice", '{"q":1}')
    assert cap.has_credential("gate") is True


def test_custom_auth_header_and_prefix(gate, secret_env):
    server, seen = gate([{"status": 204}])
    cap = HttpCap({"gate": Endpoint(url=server.url, credential_env="SE_PY_GATE_KEY", auth_header="X-Gate-Key",
                                    auth_prefix="")})
    # The endpoint's own auth header is the host's, in any case.
    assert denied(cap, request(headers=[("x-gate-key", "mine")])) == "denied"
    assert server.requests == 0
    assert cap.post(request()).status == 204
    assert seen()[0]["headers"]["x-gate-key"] == SECRET
    assert "authorization" not in seen()[0]["headers"]


@pytest.mark.parametrize("value", [None, "", "   \t"])
def test_missing_or_blank_credential_is_no_credential_and_sends_nothing(gate, monkeypatch, value):
    if value is None:
        monkeypatch.delenv("SE_PY_NOKEY", raising=False)
    else:
        monkeypatch.setenv("SE_PY_NOKEY", value)
    server, _ = gate([{"status": 200}])
    cap = HttpCap({"nokey": {"url": server.url, "credentialEnv": "SE_PY_NOKEY"}})
    assert cap.has_credential("nokey") is False
    assert denied(cap, request(endpoint="nokey")) == "no-credential"
    assert server.requests == 0


def test_endpoint_without_credential_env_needs_none(gate):
    server, seen = gate([{"status": 200}])
    cap = HttpCap({"open": {"url": server.url}})
    assert cap.has_credential("open") is True  # as Rust and Node: nothing missing
    assert cap.post(request(endpoint="open")).status == 200
    assert "authorization" not in seen()[0]["headers"]


# -- what the plugin may send ----------------------------------------------------------------------

def test_forbidden_headers_are_denied_before_sending(gate, secret_env):
    server, _ = gate([])
    cap = HttpCap({"gate": {"url": server.url, "credentialEnv": "SE_PY_GATE_KEY"}})
    assert len(FORBIDDEN_HEADERS) == 9
    for name in sorted(FORBIDDEN_HEADERS):
        for spelling in (name, name.upper(), name.title()):
            assert denied(cap, request(headers=[("accept", "*/*"), (spelling, "x")])) == "denied", spelling
    assert server.requests == 0


def test_malformed_headers_are_denied_before_sending(gate, secret_env):
    server, _ = gate([])
    cap = HttpCap({"gate": {"url": server.url, "credentialEnv": "SE_PY_GATE_KEY"}})
    bad = [("", "x"), ("bad header", "x"), ("x:y", "x"), ("x-é", "x"), ("x-a\n", "x"), ("x.a", "x"),
           ("x-a", "line\r\nInjected: 1"), ("x-a", "a\rb"), ("x-a", "a\nb"), ("x-a", "a\0b")]
    for name, value in bad:
        assert denied(cap, request(headers=[(name, value)])) == "denied", (name, value)
    assert server.requests == 0


def test_other_control_chars_in_values_fail_as_network_before_sending(gate, secret_env):
    # ureq refuses these when building the request: a network error, and nothing is sent.
    server, _ = gate([])
    cap = HttpCap({"gate": {"url": server.url, "credentialEnv": "SE_PY_GATE_KEY"}})
    for value in ["a\x01b", "a\x7fb"]:
        with pytest.raises(HttpError) as err:
            cap.post(request(headers=[("x-a", value)]))
        assert err.value.tag == "network"
        assert SECRET not in str(err.value)
    assert server.requests == 0


BAD_PATHS = ["", "v1", "//evil.example/x", "/../admin", "/a/..", "/a#frag", "/x@y", "/a b", "/a\tb", "/a\\b",
             "/a\x00", "/a\x7f", "/a\x85", "/a\u00a0b", "/a\u2028b", "/a\nHost: evil", "/%2e%2e/admin", "/x/%2E%2e/y"]


def test_bad_paths_are_denied_before_sending(gate, secret_env):
    server, _ = gate([])
    cap = HttpCap({"gate": {"url": server.url, "credentialEnv": "SE_PY_GATE_KEY"}})
    for path in BAD_PATHS:
        assert denied(cap, request(path=path)) == "denied", repr(path)
    assert server.requests == 0


def test_non_ascii_space_and_control_paths_are_denied_before_sending(gate, secret_env):
    """Printable ASCII only, as in the Rust and Node hosts: `/café` was `network` here (the
    client's UnicodeEncodeError), raw UTF-8 from Rust, percent-encoded from Node."""
    server, seen = gate([{"status": 200}])
    cap = HttpCap({"gate": {"url": server.url, "credentialEnv": "SE_PY_GATE_KEY"}})
    for path in ["/café", "/a\ufeffb", "/a\u00a0b", "/a\u2028b", "/a b", "/a\tb", "/a\x7fb", "/a\x85b", "/✓"]:
        assert denied(cap, request(path=path)) == "denied", repr(path)
    assert server.requests == 0
    cap.post(request(path="/caf%C3%A9?q=%E2%9C%93"))  # percent-encoded non-ASCII is plain ASCII
    assert [r["path"] for r in seen()] == ["/caf%C3%A9?q=%E2%9C%93"]


def test_path_and_query_are_appended_to_the_base(gate):
    server, seen = gate([{"status": 200}, {"status": 200}])
    cap = HttpCap({"gate": {"url": server.url + "/v1/"}})
    cap.post(request(path="/decide?x=1&y=a.b"))
    cap.post(request(path="/"))
    assert [r["path"] for r in seen()] == ["/v1/decide?x=1&y=a.b", "/v1/"]


# -- what comes back -------------------------------------------------------------------------------

def test_redirect_is_returned_not_followed():
    def redirect(h):
        if h.path == "/elsewhere":
            h.send_response(200)
        else:
            h.send_response(302)
            h.send_header("location", "/elsewhere")
        h.send_header("content-length", "5")
        h.end_headers()
        h.wfile.write(b"moved")

    with serve(redirect) as (url, count):
        response = HttpCap({"gate": {"url": url}}).post(request())
        assert (response.status, response.body) == (302, b"moved")
        assert count[0] == 1


def test_slow_server_times_out_at_the_request_deadline(gate):
    server, _ = gate([{"delayMs": 2000, "status": 200}])
    cap = HttpCap({"gate": {"url": server.url}})
    started = time.monotonic()
    assert denied(cap, request(timeout_ms=200)) == "timeout"
    assert time.monotonic() - started < 1.5


def test_endpoint_cap_lowers_a_long_deadline(gate):
    server, _ = gate([{"delayMs": 2000, "status": 200}])
    cap = HttpCap({"gate": {"url": server.url, "maxTimeoutMs": 200}})
    started = time.monotonic()
    assert denied(cap, request(timeout_ms=60_000)) == "timeout"
    assert time.monotonic() - started < 1.5


def test_a_trickling_body_cannot_stretch_the_deadline():
    def trickle(h):
        h.send_response(200)
        h.send_header("content-length", "100")
        h.end_headers()
        for _ in range(100):
            h.wfile.write(b"x")
            h.wfile.flush()
            time.sleep(0.05)

    with serve(trickle) as (url, _):
        started = time.monotonic()
        assert denied(HttpCap({"gate": {"url": url}}), request(timeout_ms=400)) == "timeout"
        assert time.monotonic() - started < 1.5


@pytest.mark.parametrize("shape", ["status line and headers", "chunk-size line"])
def test_a_trickled_head_or_chunk_line_cannot_stretch_the_deadline(shape):
    # One http.client read of a status line, a header or a chunk size is many recv()s: a
    # per-recv timeout alone let these run 16.8 s and 4.5 s past a 1 s deadline.
    head = b"HTTP/1.1 200 OK\r\nX-Slow: " + b"y" * 60 + b"\r\n\r\n"
    chunked = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"

    def trickle(h):
        raw = head if shape == "status line and headers" else chunked
        if shape == "chunk-size line":
            h.wfile.write(raw)
            h.wfile.flush()
            raw = b"0" * 60 + b"5\r\nhello\r\n0\r\n\r\n"
        for byte in raw:
            try:
                h.wfile.write(bytes([byte]))
                h.wfile.flush()
            except OSError:
                return
            time.sleep(0.02)

    with serve(trickle) as (url, _):
        started = time.monotonic()
        assert denied(HttpCap({"gate": {"url": url}}), request(timeout_ms=400)) == "timeout"
        assert time.monotonic() - started < 1.5


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_refused_port_is_network_and_never_shows_the_credential(secret_env):
    cap = HttpCap({"gate": {"url": f"http://127.0.0.1:{free_port()}", "credentialEnv": "SE_PY_GATE_KEY"}})
    with pytest.raises(HttpError) as err:
        cap.post(request())
    assert err.value.tag == "network"
    assert err.value.message
    assert SECRET not in str(err.value) and SECRET not in repr(err.value)
    assert err.value.__cause__ is None and err.value.__suppress_context__


def test_network_messages_are_scrubbed_of_the_credential(monkeypatch, secret_env):
    def leaky(url, headers, body, timeout_s):
        raise OSError(f"failed sending {dict(headers)}")

    monkeypatch.setattr(http_mod, "_exchange", leaky)
    cap = HttpCap({"gate": {"url": "http://127.0.0.1:9", "credentialEnv": "SE_PY_GATE_KEY"}})
    with pytest.raises(HttpError) as err:
        cap.post(request())
    assert err.value.tag == "network"
    assert "Bearer [credential]" in err.value.message
    assert SECRET not in str(err.value)


def test_unsupported_url_scheme_is_network():
    assert denied(HttpCap({"gate": {"url": "ftp://127.0.0.1"}}), request()) == "network"


@pytest.mark.parametrize("chunked", [False, True])
def test_a_body_at_the_cap_passes_one_byte_more_is_network(chunked):
    # As ureq's `limit(..).read_to_vec()`: exactly the cap is fine, past it the call fails.
    def sized(h):
        size = int(h.path.rsplit("/", 1)[1])
        h.send_response(200)
        if chunked:
            h.protocol_version = "HTTP/1.1"
            h.send_header("transfer-encoding", "chunked")
            h.end_headers()
            h.wfile.write(b"%x\r\n" % size + b"a" * size + b"\r\n0\r\n\r\n")
        else:
            h.send_header("content-length", str(size))
            h.end_headers()
            h.wfile.write(b"a" * size)

    with serve(sized) as (url, count):
        cap = HttpCap({"gate": {"url": url}})
        response = cap.post(request(path=f"/size/{MAX_RESPONSE_BYTES}"))
        assert (response.status, len(response.body)) == (200, MAX_RESPONSE_BYTES)
        with pytest.raises(HttpError) as err:
            cap.post(request(path=f"/size/{MAX_RESPONSE_BYTES + 1}"))
        assert err.value.tag == "network"
        assert "larger than request limit" in err.value.message
        assert count[0] == 2


# -- the gate server -------------------------------------------------------------------------------

def test_gate_replays_in_order_records_and_resets(gate):
    server, seen = gate([{"status": 200, "body": {"a": 1}}, {"status": 429}, {"reset": True},
                         {"status": 200, "body": "plain text"}, {"delayMs": 100, "status": 201, "body": [1, 2]}])
    cap = HttpCap({"gate": {"url": server.url}})
    got = [cap.post(request(path="/one", body=b"first"))]
    got.append(cap.post(request(path="/two")))
    assert denied(cap, request(path="/three")) == "network"
    got.append(cap.post(request(path="/four")))
    started = time.monotonic()
    got.append(cap.post(request(path="/five")))
    assert time.monotonic() - started >= 0.09
    assert [(r.status, r.body) for r in got] == [(200, b'{"a":1}'), (429, b""), (200, b"plain text"),
                                                 (201, b"[1,2]")]
    # Ran out: every further request is reset too.
    assert denied(cap, request(path="/six")) == "network"
    records = seen()
    assert [r["path"] for r in records] == ["/one", "/two", "/three", "/four", "/five", "/six"]
    assert records[0]["method"] == "POST" and records[0]["body"] == "first"
    assert records[0]["headers"]["content-type"] == "application/json"
    assert server.requests == 6


def test_gate_is_a_context_manager_and_recording_is_optional(tmp_path):
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps([{"status": 200, "body": {"ok": True}}]))
    with serve_gate_replies(str(replies)) as server:
        assert server.url.startswith("http://127.0.0.1:")
        assert HttpCap({"gate": {"url": server.url}}).post(request()).body == b'{"ok":true}'
    with pytest.raises(HttpError) as err:  # stopped: nothing listens any more
        HttpCap({"gate": {"url": server.url}}).post(request(timeout_ms=1000))
    assert err.value.tag in ("network", "timeout")
    assert list(tmp_path.iterdir()) == [replies]

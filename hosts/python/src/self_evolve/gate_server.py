"""A scripted gate for replays and tests: an HTTP server on 127.0.0.1 that answers each request
with the next reply from a JSON file, in order, the format of the Node host's gate-server.js:

    {"status": 200, "body": {...}} | {"status": 429} | {"reset": true} | {"delayMs": N, ...}

`body` is sent as is when a string, as compact JSON otherwise, empty when absent. `reset`
closes the connection without answering; so does every request after the replies run out.
Each request may be recorded as a JSON line {method, path, headers, body}.

It runs on a daemon thread, not in a child process as in Node: the plugin's HTTP calls block
the calling thread only, and the server's threads keep answering meanwhile.
"""
from __future__ import annotations

import json
import os
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional


class GateServer:
    """The running server: `url` to point an endpoint at, `stop()` (or a `with` block) to end it."""

    def __init__(self, replies: list, record_file: Optional[str] = None):
        self._replies = list(replies)
        self._record_file = record_file
        self._lock = threading.Lock()
        self._next = 0
        self._server = _QuietServer(("127.0.0.1", 0), _handler_for(self))
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        # A short poll: stop() waits for the loop to notice, and tests start many servers.
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="gate-server",
                                        daemon=True)
        self._thread.start()

    @property
    def requests(self) -> int:
        """How many requests arrived, answered or reset: tests check denied calls sent none."""
        with self._lock:
            return self._next

    def take_reply(self) -> Optional[dict]:
        """The next reply, or None once they have run out. Taken on arrival, so concurrent
        requests still get the replies in the order they came in."""
        with self._lock:
            index = self._next
            self._next += 1
        return self._replies[index] if index < len(self._replies) else None

    def record(self, entry: dict) -> None:
        if self._record_file is None:
            return
        with self._lock:  # one whole line per request, even with requests in parallel
            with open(self._record_file, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry) + "\n")

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> "GateServer":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        # A client that gave up (a timeout test) breaks the pipe mid-answer: expected, not news.
        pass


def serve_gate_replies(replies_file: str, record_file: Optional[str] = None) -> GateServer:
    """Start a gate answering with the replies in `replies_file` (a JSON list)."""
    with open(replies_file, encoding="utf-8") as f:
        replies = json.load(f)
    if not isinstance(replies, list):
        raise ValueError(f"{replies_file}: expected a JSON list of replies")
    return GateServer(replies, record_file)


def _handler_for(gate: GateServer) -> type:
    class Handler(BaseHTTPRequestHandler):
        def _handle(self) -> None:
            reply = gate.take_reply()
            body = _read_body(self)
            gate.record({"method": self.command, "path": self.path, "headers": _headers(self),
                         "body": body.decode("utf-8", errors="replace")})
            if reply is None or reply.get("reset"):
                _reset(self)
                return
            time.sleep(max(0, reply.get("delayMs") or 0) / 1000)
            _answer(self, reply)

        do_POST = do_GET = do_PUT = do_PATCH = do_DELETE = _handle

        def log_message(self, *args) -> None:  # quiet: test output is not the place
            pass

    return Handler


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    if handler.headers.get("transfer-encoding", "").lower() == "chunked":
        return _read_chunked(handler.rfile)
    length = int(handler.headers.get("content-length") or 0)
    return handler.rfile.read(length) if length > 0 else b""


def _read_chunked(rfile) -> bytes:
    data = bytearray()
    while True:
        size = int(rfile.readline().split(b";")[0].strip() or b"0", 16)
        if size == 0:
            while rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
                pass
            return bytes(data)
        data += rfile.read(size)
        rfile.readline()  # the CRLF after each chunk


def _headers(handler: BaseHTTPRequestHandler) -> dict:
    """Lower-case names, repeats joined with ", ": the shape Node's `req.headers` records."""
    out: dict = {}
    for name, value in handler.headers.items():
        key = name.lower()
        out[key] = f"{out[key]}, {value}" if key in out else value
    return out


def _answer(handler: BaseHTTPRequestHandler, reply: dict) -> None:
    body = reply.get("body")
    text = "" if body is None else body if isinstance(body, str) else json.dumps(body, separators=(",", ":"))
    data = text.encode("utf-8")
    handler.send_response(int(reply.get("status", 200)))
    handler.send_header("content-type", "application/json")
    handler.send_header("connection", "close")
    handler.send_header("content-length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
    handler.close_connection = True


def _reset(handler: BaseHTTPRequestHandler) -> None:
    """Drop the connection with a TCP reset and no answer, as Node's `socket.destroy()`.
    Linger 0 makes close() send RST; the fd is closed here, since rfile still holds the socket."""
    sock = handler.connection
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    os.close(sock.detach())
    handler.close_connection = True

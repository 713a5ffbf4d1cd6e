"""A threaded HTTP/1.1 server on 127.0.0.1, port 0, for the fakes."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, Iterable, Optional, Type


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real services do

    def setup(self) -> None:
        super().setup()
        # Streams are many small writes; without this, delayed ACKs add ~40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def read_json(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return raw.decode("utf-8", "replace")

    def send_json(self, status: int, body: Any, headers: Optional[Dict[str, str]] = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def send_sse(
        self,
        events: Iterable[str],
        disconnect_after: Optional[int] = None,
        headers: Optional[Dict[str, str]] = None,
        delay: float = 0.0,
    ) -> None:
        """Streams pre-rendered SSE events with chunked encoding, `delay` seconds before each; optionally drops the connection mid-body."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        for index, event in enumerate(events):
            if disconnect_after is not None and index == disconnect_after:
                self.close_connection = True
                self.wfile.flush()
                return  # no terminating chunk: the client sees a broken body
            if delay:
                time.sleep(delay)
            data = event.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that leave a stream early reset the connection: expected here.
        pass


class Server:
    """Runs `handler` (bound to `self` as handler.fake) until stop()."""

    handler: Type[Handler]

    def start(self) -> "Server":
        fake = self

        class Bound(self.handler):  # type: ignore[name-defined, misc]
            pass

        Bound.fake = fake
        self._httpd = _QuietServer(("127.0.0.1", 0), Bound)
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

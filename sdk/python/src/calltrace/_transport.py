"""One kept-alive HTTP/1.1 connection for posting traces; used by the sender thread only.

A minimal client rather than http.client: http.client writes headers and body
in two system calls and parses answers with the email package, and that work
holds the GIL the application's threads need. Here a request is one write and
an answer is read with a few readline() calls. Only what the trace endpoint
needs is supported: POST, Content-Length or chunked answers, keep-alive, TLS.
"""

from __future__ import annotations

import socket
import ssl
from typing import Dict, Optional, Tuple
from urllib.parse import urlsplit

_MAX_LINE = 65536
_MAX_HEADERS = 100


class ProtocolError(OSError):
    """The server's answer is not HTTP/1.x we can read."""


class StaleConnection(ProtocolError):
    """A kept-alive connection the server closed before answering."""


class Response:
    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: Dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers  # names in lower case
        self.body = body


class Transport:
    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._sock: Optional[socket.socket] = None
        self._reader = None
        self._origin: Optional[Tuple[str, str]] = None
        self._ssl_context: Optional[ssl.SSLContext] = None

    def post(self, url: str, headers: Dict[str, str], body: bytes) -> Response:
        """Posts body to url; raises OSError (ProtocolError included) on failure."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise ValueError(f"unsupported endpoint scheme: {parts.scheme!r}")
        origin = (parts.scheme, parts.netloc)
        if origin != self._origin:
            self.close()
            self._origin = origin
        target = (parts.path or "/") + ("?" + parts.query if parts.query else "")
        head = [f"POST {target} HTTP/1.1", f"Host: {parts.netloc}", f"Content-Length: {len(body)}"]
        head += [f"{name}: {value}" for name, value in headers.items()]
        request = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
        reused = self._sock is not None
        try:
            return self._exchange(parts, request)
        except (StaleConnection, ConnectionResetError, BrokenPipeError):
            # A kept-alive connection the server has meanwhile closed fails
            # like this; that is no sign the service is down: retry at once.
            self.close()
            if not reused:
                raise
            return self._exchange(parts, request)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._reader.close()
                self._sock.close()
            except OSError:
                pass
            self._sock = self._reader = None

    def _exchange(self, parts, request: bytes) -> Response:
        if self._sock is None:
            self._connect(parts)
        self._sock.sendall(request)
        response, keep_alive = self._read_response()
        if not keep_alive:
            self.close()
        return response

    def _connect(self, parts) -> None:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        sock = socket.create_connection((parts.hostname, port), timeout=self.timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if parts.scheme == "https":
                if self._ssl_context is None:
                    self._ssl_context = ssl.create_default_context()
                sock = self._ssl_context.wrap_socket(sock, server_hostname=parts.hostname)
        except BaseException:
            sock.close()
            raise
        self._sock = sock
        self._reader = sock.makefile("rb")

    def _read_response(self) -> Tuple[Response, bool]:
        while True:
            status_line = self._line()
            if not status_line:
                raise StaleConnection("connection closed before an answer")
            version, _, rest = status_line.partition(b" ")
            if not version.startswith(b"HTTP/1.") or not rest[:3].isdigit():
                raise ProtocolError(f"not an HTTP/1.x status line: {status_line[:80]!r}")
            status = int(rest[:3])
            headers = self._headers()
            if status >= 200:
                break  # 1xx answers are informational: the real one follows
        keep_alive = version != b"HTTP/1.0" and headers.get("connection", "").lower() != "close"
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = self._chunked()
        elif "content-length" in headers:
            body = self._exactly(int(headers["content-length"]))
        elif status in (204, 304):
            body = b""
        else:  # delimited by the end of the connection
            body = self._reader.read()
            keep_alive = False
        return Response(status, headers, body), keep_alive

    def _line(self) -> bytes:
        line = self._reader.readline(_MAX_LINE + 1)
        if len(line) > _MAX_LINE:
            raise ProtocolError("header line too long")
        return line.rstrip(b"\r\n")

    def _headers(self) -> Dict[str, str]:
        headers: Dict[str, str] = {}
        for _ in range(_MAX_HEADERS):
            line = self._line()
            if not line:
                return headers
            name, _, value = line.partition(b":")
            headers[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
        raise ProtocolError("too many headers")

    def _exactly(self, size: int) -> bytes:
        data = self._reader.read(size)
        if len(data) != size:
            raise ProtocolError("connection closed mid-body")
        return data

    def _chunked(self) -> bytes:
        parts = []
        while True:
            size = int(self._line().split(b";", 1)[0], 16)
            if size == 0:
                while self._line():  # trailers, up to the blank line
                    pass
                return b"".join(parts)
            parts.append(self._exactly(size))
            self._line()  # the CRLF after each chunk

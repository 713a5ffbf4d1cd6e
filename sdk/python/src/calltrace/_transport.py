"""One keep-alive HTTP(S) connection for posting traces; used by the sender thread only.

http.client rather than urllib: urllib opens a new connection (and, for
https, a new TLS handshake) for every request, which would dominate the cost
of a small trace.
"""

from __future__ import annotations

import http.client
import ssl
from typing import Dict, Optional, Tuple
from urllib.parse import urlsplit

# A kept-alive connection the server has meanwhile closed fails like this on
# its next use; that is no sign the service is down, so it is retried at once.
_STALE_CONNECTION = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


class Response:
    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: http.client.HTTPMessage, body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body


class Transport:
    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._conn: Optional[http.client.HTTPConnection] = None
        self._origin: Optional[Tuple[str, str]] = None
        self._ssl_context: Optional[ssl.SSLContext] = None

    def post(self, url: str, headers: Dict[str, str], body: bytes) -> Response:
        """Posts body to url; raises OSError or http.client.HTTPException on failure."""
        parts = urlsplit(url)
        origin = (parts.scheme, parts.netloc)
        if origin != self._origin:
            self.close()
            self._origin = origin
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        reused = self._conn is not None and self._conn.sock is not None
        try:
            return self._exchange(parts, path, headers, body)
        except _STALE_CONNECTION:
            self.close()
            if not reused:
                raise
            return self._exchange(parts, path, headers, body)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _exchange(self, parts, path: str, headers: Dict[str, str], body: bytes) -> Response:
        if self._conn is None:
            self._conn = self._connect(parts)
        self._conn.request("POST", path, body=body, headers=headers)
        reply = self._conn.getresponse()
        data = reply.read()
        if reply.will_close:
            self.close()
        return Response(reply.status, reply.headers, data)

    def _connect(self, parts) -> http.client.HTTPConnection:
        if parts.scheme == "https":
            if self._ssl_context is None:
                self._ssl_context = ssl.create_default_context()
            return http.client.HTTPSConnection(
                parts.hostname, parts.port, timeout=self.timeout, context=self._ssl_context
            )
        if parts.scheme == "http":
            return http.client.HTTPConnection(parts.hostname, parts.port, timeout=self.timeout)
        raise ValueError(f"unsupported endpoint scheme: {parts.scheme!r}")

"""The sender's HTTP/1.1 client reads the answers real servers and proxies give."""

from __future__ import annotations

import socket
import threading

import pytest

from calltrace._transport import ProtocolError, Transport

OK = b'{"status":"ok"}'


class ScriptedServer:
    """Answers each connection's requests with canned bytes, then closes it (or keeps it, for keep-alive)."""

    def __init__(self, answers, close_after_each=False):
        self.answers = list(answers)
        self.close_after_each = close_after_each
        self.requests = []
        self.connections = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1/traces"
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while self.answers:
            conn, _ = self.sock.accept()
            self.connections += 1
            with conn, conn.makefile("rb") as reader:
                while self.answers:
                    head = b""
                    while not head.endswith(b"\r\n\r\n"):
                        line = reader.readline()
                        if not line:
                            break
                        head += line
                    if not head:
                        break
                    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                    self.requests.append(head + reader.read(length))
                    conn.sendall(self.answers.pop(0))
                    if self.close_after_each:
                        break


def post(transport, url):
    return transport.post(url, {"Content-Type": "application/json"}, b'{"a":1}')


def test_a_request_is_one_well_formed_post_and_keep_alive_reuses_the_connection():
    answer = b"HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n" + OK
    server = ScriptedServer([answer, answer])
    transport = Transport(2)

    first, second = post(transport, server.url), post(transport, server.url)

    assert (first.status, first.body, second.status) == (202, OK, 202)
    assert first.headers["content-type"] == "application/json"
    assert server.connections == 1
    head, body = server.requests[0].split(b"\r\n\r\n")
    assert head.split(b"\r\n")[0] == b"POST /v1/traces HTTP/1.1"
    assert b"Content-Length: 7" in head and body == b'{"a":1}'


def test_chunked_answers_and_informational_answers_are_read():
    chunked = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 429 Too Many Requests\r\nTransfer-Encoding: chunked\r\nRetry-After: 7\r\n\r\n5\r\n{\"ret\r\nA\r\nry_after\":\r\n2;ext=1\r\n7}\r\n0\r\n\r\n"
    server = ScriptedServer([chunked])

    answer = post(Transport(2), server.url)

    assert (answer.status, answer.body, answer.headers["retry-after"]) == (429, b'{"retry_after":7}', "7")


def test_a_connection_the_server_closes_is_replaced_for_the_next_request():
    closing = b"HTTP/1.1 202 Accepted\r\nConnection: close\r\nContent-Length: 15\r\n\r\n" + OK
    server = ScriptedServer([closing, closing], close_after_each=True)
    transport = Transport(2)

    assert [post(transport, server.url).status for _ in range(2)] == [202, 202]
    assert server.connections == 2


def test_a_kept_alive_connection_closed_while_idle_is_retried_once_on_a_new_one():
    plain = b"HTTP/1.1 202 Accepted\r\nContent-Length: 15\r\n\r\n" + OK
    server = ScriptedServer([plain, plain], close_after_each=True)  # closes without saying so
    transport = Transport(2)

    assert [post(transport, server.url).status for _ in range(2)] == [202, 202]
    assert server.connections == 2


def test_garbage_is_a_protocol_error():
    server = ScriptedServer([b"SSH-2.0-OpenSSH_9.6\r\n\r\n"])
    with pytest.raises(ProtocolError):
        post(Transport(2), server.url)

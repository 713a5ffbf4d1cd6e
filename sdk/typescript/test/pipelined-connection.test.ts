import { readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { PipelinedConnection } from "../src/pipelined-connection.js";

const options = { timeoutMs: 2_000, idleMs: 4_000 };
const closers: Array<() => void> = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

/** An HTTP server whose handler answers each request; returns its URL. */
async function serve(handler: http.RequestListener, secure = false): Promise<URL> {
  const tlsFiles = {
    cert: readFileSync(new URL("support/tls/cert.pem", import.meta.url)),
    key: readFileSync(new URL("support/tls/key.pem", import.meta.url)),
  };
  const server = secure ? https.createServer(tlsFiles, handler) : http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => {
    server.closeAllConnections();
    server.close();
  });
  return new URL(`${secure ? "https" : "http"}://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`);
}

/** A raw TCP server that answers every request with `reply`; returns its URL. */
async function serveRaw(reply: (socket: net.Socket) => void): Promise<URL> {
  const server = net.createServer((socket) => socket.once("data", () => reply(socket)));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => server.close());
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`);
}

function connect(url: URL, extra = {}): PipelinedConnection {
  const connection = new PipelinedConnection(url, { ...options, ...extra });
  closers.push(() => connection.close());
  return connection;
}

// Answers with the status the request body asks for.
const echoStatus: http.RequestListener = (request, response) => {
  let body = "";
  request.on("data", (chunk) => (body += chunk));
  request.on("end", () => {
    const { status } = JSON.parse(body);
    response
      .writeHead(status, { "content-type": "application/json" })
      .end(JSON.stringify({ error: `status ${status}`, retry_after: 3 }));
  });
};

describe("PipelinedConnection", () => {
  it("sends the request line, headers and body, and reads the answer", async () => {
    let seen: http.IncomingMessage | undefined;
    let body = "";
    const url = await serve((request, response) => {
      seen = request;
      request.on("data", (chunk) => (body += chunk));
      request.on("end", () => response.writeHead(202).end('{"status":"ok"}'));
    });
    const result = await connect(url).post(
      "Authorization: Bearer ct_x\r\nContent-Type: application/json\r\n",
      '{"model":"é"}',
    );
    expect(result).toEqual({ status: 202 });
    expect(seen?.method).toBe("POST");
    expect(seen?.url).toBe("/v1/traces");
    expect(seen?.headers).toMatchObject({
      host: url.host,
      authorization: "Bearer ct_x",
      "content-type": "application/json",
      "content-length": "14",
    });
    expect(body).toBe('{"model":"é"}');
  });

  it("pipelines many requests on one connection and matches each answer to its request", async () => {
    const sockets = new Set<unknown>();
    const url = await serve((request, response) => {
      sockets.add(request.socket);
      echoStatus(request, response);
    });
    const connection = connect(url);
    const statuses = Array.from({ length: 40 }, (_, i) => [202, 429, 503, 400][i % 4]!);
    const results = await Promise.all(statuses.map((status) => connection.post("", JSON.stringify({ status }))));
    expect(results.map((r) => r.status)).toEqual(statuses);
    expect(results[1]).toEqual({ status: 429, error: "status 429", retryAfterSeconds: 3 });
    expect(sockets.size).toBe(1);
  });

  it("reads chunked answers, with trailers, and the Retry-After header", async () => {
    const url = await serveRaw((socket) =>
      socket.write(
        "HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\nRetry-After: 7\r\n\r\n" +
          '6\r\n{"erro\r\n19\r\nr":"Service unavailable"}\r\n0\r\nX-Trailer: 1\r\n\r\n',
      ),
    );
    expect(await connect(url).post("", "{}")).toEqual({
      status: 503,
      error: "Service unavailable",
      retryAfterSeconds: 7,
    });
  });

  it("skips interim 1xx answers", async () => {
    const url = await serveRaw((socket) =>
      socket.write('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Accepted\r\nContent-Length: 15\r\n\r\n{"status":"ok"}'),
    );
    expect(await connect(url).post("", "{}")).toEqual({ status: 202 });
  });

  it("reads a body that runs to the end of the connection", async () => {
    const url = await serveRaw((socket) => socket.end('HTTP/1.1 502 Bad Gateway\r\n\r\n{"error":"Bad gateway"}'));
    expect(await connect(url).post("", "{}")).toEqual({ status: 502, error: "Bad gateway" });
  });

  it("fails the requests behind an answer that closes the connection, then reconnects", async () => {
    let count = 0;
    const url = await serve((request, response) => {
      request.resume();
      request.on("end", () => {
        if (++count === 1) response.setHeader("connection", "close");
        response.writeHead(202).end("{}");
      });
    });
    const connection = connect(url);
    const results = await Promise.allSettled([
      connection.post("", "{}"),
      connection.post("", "{}"),
      connection.post("", "{}"),
    ]);
    expect(results[0]).toEqual({ status: "fulfilled", value: { status: 202 } });
    expect(results.slice(1).map((r) => r.status)).toEqual(["rejected", "rejected"]);
    expect(await connection.post("", "{}")).toEqual({ status: 202 });
  });

  it("fails waiting requests after timeoutMs of silence, then reconnects", async () => {
    let count = 0;
    const url = await serve((request, response) => {
      request.resume();
      if (++count > 1) request.on("end", () => response.writeHead(202).end());
    });
    const connection = connect(url, { timeoutMs: 100 });
    await expect(connection.post("", "{}")).rejects.toThrow(/timed out/);
    expect(await connection.post("", "{}")).toEqual({ status: 202 });
  });

  it("closes an idle connection before a server would, and reconnects", async () => {
    const url = await serve((request, response) => {
      request.resume();
      request.on("end", () => response.writeHead(202).end());
    });
    const connection = connect(url, { idleMs: 50 });
    expect(await connection.post("", "{}")).toEqual({ status: 202 });
    await new Promise((resolve) => setTimeout(resolve, 150)); // our idle close
    expect(await connection.post("", "{}")).toEqual({ status: 202 });
  });

  it("rejects when nothing listens", async () => {
    const url = await serve(() => {});
    for (const close of closers.splice(0)) close();
    await expect(connect(url).post("", "{}")).rejects.toThrow();
  });

  it("rejects a malformed answer", async () => {
    const url = await serveRaw((socket) => socket.write("SMTP ready\r\n\r\n"));
    await expect(connect(url).post("", "{}")).rejects.toThrow(/malformed/);
  });

  it("close() fails waiting requests and refuses new ones", async () => {
    const url = await serve(() => {});
    const connection = connect(url);
    const waiting = connection.post("", "{}");
    connection.close();
    await expect(waiting).rejects.toThrow(/closed/);
    await expect(connection.post("", "{}")).rejects.toThrow(/closed/);
  });

  it("speaks https, checking the server's certificate", async () => {
    const url = await serve(echoStatus, true);
    await expect(connect(url).post("", '{"status":202}')).rejects.toThrow(/self-signed|certificate/);
    const ca = readFileSync(new URL("support/tls/cert.pem", import.meta.url));
    expect(await connect(url, { tls: { ca } }).post("", '{"status":202}')).toEqual({ status: 202 });
  });
});

import { request as httpRequest } from "node:http";
import { connect as http2Connect, type ClientHttp2Session } from "node:http2";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IngestRequestSchema, TraceService } from "../../gen/calltrace/v1/trace_service_pb.js";
import { startTestService, traceBody, type TestService } from "../support/test-service.js";
import { expectServed, openRaw } from "./support/attack.js";
import { grpcEnvelope } from "./support/raw-h2.js";

// D9: the server stops reading at MAX_BODY_BYTES on every protocol, whether or not the client
// announced a length, and keeps serving everyone else.
const limit = 8192;
let service: TestService;
let key: string;
let session: ClientHttp2Session;

beforeAll(async () => {
  service = await startTestService({ maxBodyBytes: limit });
  key = (await service.createKey("pro")).key;
  session = http2Connect(service.url);
  session.on("error", () => {});
});
afterAll(() => session.close());

/** Streams `total` bytes in 16 KiB chunks with no Content-Length (chunked) until done or cut off. */
function chunkedPost(path: string, headers: Record<string, string>, total: number) {
  return new Promise<{ status: number; body: string; sent: number }>((resolve, reject) => {
    const req = httpRequest(`${service.url}${path}`, { method: "POST", headers: { ...headers, "transfer-encoding": "chunked" } });
    let sent = 0;
    const chunk = Buffer.alloc(16 * 1024, 0x20);
    const pump = () => {
      while (sent < total && !req.destroyed) {
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once("drain", pump);
      }
      if (!req.destroyed) req.end();
    };
    req.on("response", (res) => {
      let body = "";
      res.on("data", (c: Buffer) => (body += c.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body, sent }));
      res.on("error", reject);
    });
    req.on("error", reject);
    pump();
  });
}

/** Sends `body` on one HTTP/2 stream of the shared session, without content-length. */
function h2Post(headers: Record<string, string>, body: Buffer, total = body.length) {
  return new Promise<{ status: number; headers: Record<string, unknown>; trailers: Record<string, unknown>; sent: number }>(
    (resolve, reject) => {
      const stream = session.request({ ":method": "POST", ...headers });
      let status = 0;
      let responseHeaders: Record<string, unknown> = {};
      let trailers: Record<string, unknown> = {};
      let sent = 0;
      stream.on("response", (h) => {
        status = Number(h[":status"]);
        responseHeaders = h;
      });
      stream.on("trailers", (t) => (trailers = t));
      stream.on("error", reject);
      stream.on("close", () => resolve({ status, headers: responseHeaders, trailers, sent }));
      stream.resume();
      const pump = () => {
        while (sent < total && !stream.destroyed && !stream.closed) {
          const piece = body.subarray(sent % body.length, Math.min(body.length, (sent % body.length) + 16 * 1024));
          sent += piece.length;
          if (!stream.write(piece)) return void stream.once("drain", pump);
        }
        if (!stream.destroyed) stream.end();
      };
      pump();
    },
  );
}

const big = 4 * 1024 * 1024;
/** OTLP_MAX_BODY_BYTES's default. */
const otlpLimit = 16 * 1024 * 1024;

describe("oversized bodies are refused without being read (D9)", () => {
  // A JSON body announced between MAX_BODY_BYTES and OTLP_MAX_BODY_BYTES is judged by its first
  // bytes (an OTLP Export may have the larger limit, D47); past both it is refused before any.
  it.each([
    ["over both limits, before any byte of the body", otlpLimit + 1, ""],
    ["over MAX_BODY_BYTES, as soon as its first bytes show a spec trace", big, '{"provider":"openai","model":"gpt-4o",'],
  ])("REST: an announced Content-Length %s is 413 at once and the connection is closed", async (_case, length, start) => {
    const raw = await openRaw(service.port);
    raw.socket.write(
      `POST /v1/traces HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n${start && start + " ".repeat(limit)}`,
    );
    expect(await raw.closedWithin(10_000)).toBe(true);
    expect(raw.received()).toMatch(/^HTTP\/1\.1 413/);
    await expectServed(service.url, key);
  });

  it("REST: a chunked body with no length is cut at the limit with 413, long before the client is done", async () => {
    const result = await chunkedPost("/v1/traces", { authorization: `Bearer ${key}`, "content-type": "application/json" }, big).catch(
      (error: Error) => ({ status: -1, body: error.message, sent: big }),
    );
    // Either the 413 arrived, or the server hung up mid-upload after sending it.
    if (result.status !== -1) {
      expect(result.status).toBe(413);
      expect(JSON.parse(result.body)).toEqual({ error: "Payload too large", details: `request body exceeds the limit of ${limit} bytes` });
    }
    await expectServed(service.url, key);
  });

  it("REST over HTTP/2: an oversized body is 413 and the stream is ended, so the connection serves the next request", async () => {
    const result = await h2Post(
      { ":path": "/v1/traces", authorization: `Bearer ${key}`, "content-type": "application/json" },
      Buffer.alloc(64 * 1024, 0x20),
      big,
    );
    expect(result.status).toBe(413);
    expect(result.sent).toBeLessThan(big);
    const next = await h2Post(
      { ":path": "/v1/traces", authorization: `Bearer ${key}`, "content-type": "application/json" },
      Buffer.from(JSON.stringify(traceBody(key))),
    );
    expect(next.status).toBe(202);
  });

  it("Connect over HTTP/1.1: a chunked JSON body over the limit is RESOURCE_EXHAUSTED", async () => {
    const result = await chunkedPost(
      "/calltrace.v1.TraceService/Ingest",
      { authorization: `Bearer ${key}`, "content-type": "application/json" },
      big,
    ).catch((error: Error) => ({ status: -1, body: error.message, sent: big }));
    if (result.status !== -1) {
      expect(result.status).toBe(429); // Connect's HTTP status for resource_exhausted
      expect(JSON.parse(result.body).code).toBe("resource_exhausted");
    }
    await expectServed(service.url, key);
  });

  it.each([
    ["Connect client over h2c: a trace", () => createConnectTransport({ baseUrl: service.url, httpVersion: "2" })],
    ["gRPC: a message", () => createGrpcTransport({ baseUrl: service.url })],
  ])("%s over the limit is RESOURCE_EXHAUSTED", async (_name, transport) => {
    const client = createClient(TraceService, transport());
    const error = await client
      .ingest({ trace: { ...rpcTrace(key), model: "m".repeat(limit * 2) } }, { headers: { authorization: `Bearer ${key}` } })
      .then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
    expect(error?.code).toBe(Code.ResourceExhausted);
  });

  it("gRPC: an envelope announcing 1 GiB is refused from its header, before any of it is sent", async () => {
    const message = toBinary(IngestRequestSchema, create(IngestRequestSchema, { trace: rpcTrace(key) }));
    const result = await h2Post(
      { ":path": "/calltrace.v1.TraceService/Ingest", "content-type": "application/grpc", te: "trailers", authorization: `Bearer ${key}` },
      grpcEnvelope(message, 1 << 30),
    );
    const status = result.trailers["grpc-status"] ?? result.headers["grpc-status"];
    expect(status).toBe(String(Code.ResourceExhausted));
    await expectServed(service.url, key);
  });

  it("gRPC: a stream of envelopes with no length, past the limit, is RESOURCE_EXHAUSTED", async () => {
    const message = toBinary(IngestRequestSchema, create(IngestRequestSchema, { trace: rpcTrace(key) }));
    const envelope = grpcEnvelope(message);
    const result = await h2Post(
      { ":path": "/calltrace.v1.TraceService/Ingest", "content-type": "application/grpc", te: "trailers", authorization: `Bearer ${key}` },
      Buffer.concat(Array.from({ length: Math.ceil((64 * 1024) / envelope.length) }, () => envelope)),
      big,
    );
    const status = result.trailers["grpc-status"] ?? result.headers["grpc-status"];
    // Connect refuses a second message on a unary call (UNIMPLEMENTED) or the total size (RESOURCE_EXHAUSTED).
    expect([String(Code.Unimplemented), String(Code.ResourceExhausted)]).toContain(status);
    expect(result.sent).toBeLessThan(big);
    await expectServed(service.url, key);
  });
});

function rpcTrace(apiKey: string) {
  return { provider: "openai", model: "gpt-4o", tokensIn: 1, tokensOut: 2, latencyMs: 3, costUsd: 0.1, apiKey, status: "success" };
}

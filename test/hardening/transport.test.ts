import { request as httpsRequest } from "node:https";
import { connect as http2Connect } from "node:http2";
import { connect as tlsConnect, type ConnectionOptions } from "node:tls";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { beforeAll, describe, expect, it } from "vitest";
import { TraceService } from "../../gen/calltrace/v1/trace_service_pb.js";
import { postTrace, startTestService, traceBody, type TestService } from "../support/test-service.js";
import { throwawayCertificate } from "../support/tls-certificate.js";
import { openRaw } from "./support/attack.js";

// TLS when configured: TLS 1.2+ with forward-secret AEAD ciphers only, HTTP/2 through ALPN,
// HSTS, the same timeouts as cleartext; and on every response a request id and no server banner.
let tls: TestService;
let plain: TestService;
let cert: Buffer;
let key: string;

beforeAll(async () => {
  const certificate = throwawayCertificate();
  const { certFile, keyFile } = certificate;
  cert = certificate.cert;
  tls = await startTestService({ tlsCertFile: certFile, tlsKeyFile: keyFile, headersTimeoutMs: 1000, requestTimeoutMs: 2000 });
  plain = await startTestService({});
  key = (await tls.createKey("pro")).key;
});

function handshake(options: ConnectionOptions): Promise<{ protocol: string | null; cipher: string; alpn: string | false }> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: "127.0.0.1", port: tls.port, ca: cert, servername: "localhost", ...options }, () => {
      const result = { protocol: socket.getProtocol(), cipher: socket.getCipher().name, alpn: socket.alpnProtocol ?? false };
      socket.end();
      resolve(result);
    });
    socket.on("error", reject);
  });
}

function https1(path: string, headers: Record<string, string> = {}, method = "GET", body?: string) {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }>((resolve, reject) => {
    const req = httpsRequest({ host: "127.0.0.1", port: tls.port, path, method, headers, ca: cert, servername: "localhost" }, (res) => {
      let text = "";
      res.on("data", (c: Buffer) => (text += c.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("TLS", () => {
  it("negotiates TLS 1.3, or TLS 1.2 with a forward-secret AEAD cipher", async () => {
    expect((await handshake({})).protocol).toBe("TLSv1.3");
    const tls12 = await handshake({ maxVersion: "TLSv1.2" });
    expect(tls12.protocol).toBe("TLSv1.2");
    expect(tls12.cipher).toMatch(/^ECDHE-(ECDSA|RSA)-(AES\d+-GCM-SHA\d+|CHACHA20-POLY1305)$/);
  });

  it("refuses TLS 1.1 and TLS 1.2 without forward secrecy or AEAD", async () => {
    await expect(handshake({ minVersion: "TLSv1", maxVersion: "TLSv1.1", ciphers: "DEFAULT:@SECLEVEL=0" })).rejects.toThrow();
    await expect(handshake({ maxVersion: "TLSv1.2", ciphers: "AES128-SHA:AES256-GCM-SHA384:ECDHE-ECDSA-AES128-SHA" })).rejects.toThrow();
  });

  it("speaks HTTP/2 when ALPN asks for h2, with HSTS", async () => {
    const session = http2Connect(`https://127.0.0.1:${tls.port}`, { ca: cert, servername: "localhost" });
    const headers = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const stream = session.request({ ":path": "/healthz" });
      stream.on("response", resolve);
      stream.on("error", reject);
      stream.resume();
    });
    expect(session.alpnProtocol).toBe("h2");
    expect(headers[":status"]).toBe(200);
    expect(headers["strict-transport-security"]).toBe("max-age=63072000; includeSubDomains");
    session.close();
  });

  it("speaks HTTP/1.1 when ALPN asks for it, with HSTS; REST ingest works", async () => {
    const response = await https1(
      "/v1/traces",
      { authorization: `Bearer ${key}`, "content-type": "application/json" },
      "POST",
      JSON.stringify(traceBody(key)),
    );
    expect(response.status).toBe(202);
    expect(response.headers["strict-transport-security"]).toBe("max-age=63072000; includeSubDomains");
  });

  it("serves gRPC over TLS", async () => {
    const client = createClient(
      TraceService,
      createGrpcTransport({ baseUrl: tls.url.replace("127.0.0.1", "localhost"), nodeOptions: { ca: cert } }),
    );
    const response = await client.ingest(
      { trace: { provider: "openai", model: "m", tokensIn: 1, tokensOut: 1, latencyMs: 1, costUsd: 0, apiKey: key, status: "success" } },
      { headers: { authorization: `Bearer ${key}` } },
    );
    expect(response.status).toBe("ok");
  });

  it("cuts a connection that never starts its handshake after the header timeout", async () => {
    const idle = await openRaw(tls.port);
    expect(await idle.closedWithin(10_000)).toBe(true);
  });

  it("sends no HSTS over cleartext", async () => {
    expect((await fetch(`${plain.url}/healthz`)).headers.get("strict-transport-security")).toBeNull();
  });
});

describe("every response", () => {
  it("carries no server banner and says nosniff", async () => {
    for (const response of [
      await fetch(`${plain.url}/healthz`),
      await fetch(`${plain.url}/nope`),
      await postTrace(plain.url, {}, {}),
      await fetch(`${plain.url}/app/`),
    ]) {
      expect(response.headers.get("server")).toBeNull();
      expect(response.headers.get("x-powered-by")).toBeNull();
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    }
  });

  it("carries an X-Request-Id: the client's when sane, a new one otherwise", async () => {
    const fresh = await fetch(`${plain.url}/healthz`);
    expect(fresh.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    const echoed = await fetch(`${plain.url}/healthz`, { headers: { "x-request-id": "trace-abc.123:4_5" } });
    expect(echoed.headers.get("x-request-id")).toBe("trace-abc.123:4_5");
    for (const insane of ["has space", "x".repeat(129), "<script>", "a\u00e9"]) {
      const response = await fetch(`${plain.url}/healthz`, {
        headers: { "x-request-id": encodeURI(insane) === insane ? insane : "bad%20id" },
      });
      expect(response.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it("on gRPC too, in the response headers", async () => {
    const { key: k } = await plain.createKey("pro");
    let headers: Headers | undefined;
    const client = createClient(TraceService, createGrpcTransport({ baseUrl: plain.url }));
    await client.ingest(
      { trace: { provider: "openai", model: "m", tokensIn: 1, tokensOut: 1, latencyMs: 1, costUsd: 0, apiKey: k, status: "success" } },
      { headers: { authorization: `Bearer ${k}`, "x-request-id": "grpc-call-1" }, onHeader: (h) => (headers = h) },
    );
    expect(headers?.get("x-request-id")).toBe("grpc-call-1");
  });
});

import { Writable } from "node:stream";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TraceService } from "../../gen/calltrace/v1/trace_service_pb.js";
import { type RunningService, startService } from "../../src/app.js";
import { mintApiKey } from "../../src/auth/api-key.js";
import { resolveConfig } from "../../src/config/config.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { postTrace, startTestService, traceBody, type TestService } from "../support/test-service.js";
import { tempDir } from "../support/temp-dir.js";

// Operability: Prometheus metrics behind a token or on their own port, and one JSON log line per
// request carrying its request id, never a key or a trace body.
const token = "metrics-token-for-tests";
let service: RunningService;
let lines: Record<string, unknown>[] = [];
let rawLog = "";
let key: string;
let freeKey: string;
const store = { close: async () => {} };

beforeAll(async () => {
  const dataDir = tempDir();
  const config = {
    ...resolveConfig({}, {}),
    port: 0,
    dataDir,
    metricsPort: 0,
    metricsToken: token,
  };
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      rawLog += chunk.toString();
      for (const line of chunk.toString().split("\n").filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  service = await startService(config, pino({ level: "debug", base: { service: "calltrace" } }, sink));
  const keys = openSqliteStore(dataDir);
  Object.assign(store, { close: () => keys.close() });
  const mint = async (plan: string) => {
    const account = (await keys.teams.createOrganization({ name: "t", project: { name: "t", plan: plan } })).project;
    const minted = mintApiKey();
    await keys.keys.createKey({ accountId: account.id, name: "t", hash: minted.hash, prefix: minted.prefix });
    return minted.plaintext;
  };
  key = await mint("pro");
  freeKey = await mint("free");
});
afterAll(async () => {
  await service.close(1000);
  await store.close();
});

const scrape = async (url: string, auth = true) => fetch(`${url}/metrics`, auth ? { headers: { authorization: `Bearer ${token}` } } : {});
const metricsUrl = () => `http://127.0.0.1:${service.metricsPort}`;
const rpcTrace = (apiKey: string, model = "m") => ({
  provider: "openai",
  model,
  tokensIn: 1,
  tokensOut: 1,
  latencyMs: 1,
  costUsd: 0,
  apiKey,
  status: "success",
});

function value(text: string, series: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line ? Number(line.split(" ")[1]) : 0;
}

describe("metrics", () => {
  it("on the main port only with the token; on the metrics port with the token too", async () => {
    expect((await scrape(service.url, false)).status).toBe(404);
    expect((await fetch(`${service.url}/metrics`, { headers: { authorization: "Bearer wrong" } })).status).toBe(404);
    const main = await scrape(service.url);
    expect(main.status).toBe(200);
    expect(main.headers.get("content-type")).toMatch(/^text\/plain/);
    expect((await scrape(metricsUrl(), false)).status).toBe(401);
    expect((await scrape(metricsUrl())).status).toBe(200);
    expect((await fetch(`${metricsUrl()}/other`)).status).toBe(404);
  });

  it("count requests by protocol and status, with latency, batch sizes, queue depth and limiter decisions", async () => {
    expect((await postTrace(service.url, traceBody(key), { key })).status).toBe(202);
    expect((await postTrace(service.url, traceBody(key), {})).status).toBe(401);
    expect((await postTrace(service.url, traceBody(freeKey), { key: freeKey })).status).toBe(202);
    const grpc = createClient(TraceService, createGrpcTransport({ baseUrl: service.url }));
    await grpc.ingest({ trace: rpcTrace(key) }, { headers: { authorization: `Bearer ${key}` } });
    await grpc.ingest({ trace: { ...rpcTrace(key), provider: "x" } }, { headers: { authorization: `Bearer ${key}` } }).catch(() => {});
    const connect = createClient(TraceService, createConnectTransport({ baseUrl: service.url, httpVersion: "1.1" }));
    await connect.ingest({ trace: rpcTrace(key) }, { headers: { authorization: `Bearer ${key}` } });
    // The free plan allows 100 a minute: the 101st is refused by the per-key limiter.
    let refused = 0;
    for (let i = 0; i < 101 && refused === 0; i++)
      if ((await postTrace(service.url, traceBody(freeKey), { key: freeKey })).status === 429) refused++;
    expect(refused).toBe(1);

    const text = await (await scrape(metricsUrl())).text();
    expect(value(text, 'calltrace_requests_total{protocol="rest",status="202"}')).toBeGreaterThanOrEqual(2);
    expect(value(text, 'calltrace_requests_total{protocol="rest",status="401"}')).toBeGreaterThanOrEqual(1);
    expect(value(text, 'calltrace_requests_total{protocol="rest",status="429"}')).toBe(1);
    expect(value(text, 'calltrace_requests_total{protocol="grpc",status="ok"}')).toBe(1);
    expect(value(text, 'calltrace_requests_total{protocol="grpc",status="invalid_argument"}')).toBe(1);
    expect(value(text, 'calltrace_requests_total{protocol="connect",status="ok"}')).toBe(1);
    expect(value(text, 'calltrace_request_duration_seconds_count{protocol="rest"}')).toBeGreaterThanOrEqual(3);
    expect(text).toMatch(/^calltrace_request_duration_seconds_bucket\{le="0\.005",protocol="grpc"\} \d+/m);
    expect(value(text, "calltrace_writer_batch_size_count")).toBeGreaterThanOrEqual(1);
    expect(value(text, "calltrace_writer_batch_size_sum")).toBeGreaterThanOrEqual(4);
    expect(text).toMatch(/^calltrace_writer_queue_depth \d+$/m);
    expect(value(text, 'calltrace_limiter_decisions_total{limiter="per_key",decision="allowed"}')).toBeGreaterThanOrEqual(4);
    expect(value(text, 'calltrace_limiter_decisions_total{limiter="per_key",decision="refused"}')).toBe(1);
    expect(value(text, 'calltrace_limiter_decisions_total{limiter="monthly_quota",decision="allowed"}')).toBeGreaterThanOrEqual(4);
    expect(text).toMatch(/^process_resident_memory_bytes \d+/m);
  });

  it("count store errors when the store cannot take a write", async () => {
    const full: TestService = await startTestService({ writerMaxQueue: 0, metricsToken: token });
    const { key: k } = await full.createKey("pro");
    expect((await postTrace(full.url, traceBody(k), { key: k })).status).toBe(503);
    const text = await (await scrape(full.url)).text();
    expect(value(text, 'calltrace_store_errors_total{operation="ingest"}')).toBe(1);
    expect(value(text, 'calltrace_requests_total{protocol="rest",status="503"}')).toBe(1);
  });
});

describe("logs", () => {
  it("one line per request with its request id: info when refused, debug when served", async () => {
    lines = [];
    const ok = await postTrace(service.url, traceBody(key, { model: "secret-model-name" }), {
      key,
      headers: { "x-request-id": "req-ok-1" },
    });
    const bad = await postTrace(service.url, traceBody(key, { model: "secret-model-name", provider: "nope" }), {
      key,
      headers: { "x-request-id": "req-bad-1" },
    });
    const denied = await postTrace(service.url, traceBody(key), { key: `${key}x`, headers: { "x-request-id": "req-401-1" } });
    expect([ok.status, bad.status, denied.status]).toEqual([202, 400, 401]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const requestLines = (id: string) => lines.filter((l) => l.reqId === id && l.msg === "request");
    expect(requestLines("req-ok-1")).toHaveLength(1);
    expect(requestLines("req-ok-1")[0]).toMatchObject({ level: 20, method: "POST", path: "/v1/traces", protocol: "rest", status: "202" });
    expect(requestLines("req-bad-1")).toHaveLength(1);
    expect(requestLines("req-bad-1")[0]).toMatchObject({ level: 30, status: "400" });
    expect(requestLines("req-401-1")[0]).toMatchObject({ level: 30, status: "401" });
    expect(typeof requestLines("req-ok-1")[0]!.ms).toBe("number");
  });

  it("never contain a key or a trace body", async () => {
    await postTrace(service.url, traceBody(key, { model: "secret-model-name", error: "secret-error-text", status: "error" }), { key });
    await fetch(`${service.url}/v1/traces?api_key=${key}`, { method: "POST", headers: { authorization: `Bearer ${key}` }, body: "{" });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(rawLog).not.toContain(key);
    expect(rawLog).not.toContain(freeKey);
    expect(rawLog).not.toContain(key.slice(3, 20));
    expect(rawLog).not.toContain("secret-model-name");
    expect(rawLog).not.toContain("secret-error-text");
    expect(rawLog).not.toContain(token);
  });
});

import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { IngestPipeline } from "../../src/ingest/ingest-pipeline.js";
import { PriceBook } from "../../src/pricing/price-match.js";
import { createRequestHandler } from "../../src/server/request-handler.js";
import { traceBody } from "../support/test-service.js";
import { exportOf, genAiSpan } from "../otlp/otlp-support.js";
import { ExportTraceServiceRequestSchema } from "../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { fromBinary, toBinary } from "@bufbuild/protobuf";

/**
 * A pipeline step that fails in a way no refusal describes (a bug, an unexpected exception) must
 * still answer: 500 {"error":"Internal error"}, never a request left hanging. The real pipeline
 * cannot be made to throw on cue, so these steps throw on purpose; the HTTP edge and the sockets
 * are the real ones.
 */
const key = "ct_0123456789abcdefghijklmnopqrstuvwxyzABCD";
const logged: string[] = [];
const logger = pino({ level: "error" }, { write: (line: string) => logged.push(line) });

function serve(pipeline: IngestPipeline) {
  // No project has custom prices here: the catalog's alone.
  const otlp = { prices: { book: () => new PriceBook([]), changed: () => {} }, metadataAttributes: [], storedSpans: async () => [] };
  const server = createServer(
    createRequestHandler({ pipeline, otlp, ready: async () => ({}), maxBodyBytes: 65536, trustProxy: false, logger }),
  );
  return new Promise<{ url: string; close: () => void }>((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() }),
    ),
  );
}

const admitted: Awaited<ReturnType<IngestPipeline["admit"]>> = {
  key: { id: "key_x", accountId: "acc_x", name: "", prefix: "01234567", plan: "pro", createdAt: new Date() },
  presentedKey: key,
  plan: { name: "pro", perMinute: 1000, perMonth: 1000 },
  headers: {},
} as Awaited<ReturnType<IngestPipeline["admit"]>>;

const post = (url: string) =>
  fetch(`${url}/v1/traces`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify(traceBody(key)),
    signal: AbortSignal.timeout(5000),
  });

describe("unforeseen errors on POST /v1/traces", () => {
  const servers: { url: string; close: () => void }[] = [];
  beforeAll(async () => {
    servers.push(
      await serve({
        admit: async () => {
          throw new TypeError("admit broke");
        },
        accept: async () => ({}),
        acceptCalls: async () => ({ headers: {}, stored: 0, duplicates: 0, rejected: [] }),
        abandon: async () => {},
        priceBook: async () => new PriceBook([]),
      }),
      await serve({
        admit: async () => admitted,
        accept: async () => {
          throw new TypeError("accept broke after the body was read");
        },
        acceptCalls: async () => {
          throw new TypeError("accept broke after the body was read");
        },
        abandon: async () => {},
        priceBook: async () => new PriceBook([]),
      }),
    );
  });
  afterAll(() => {
    for (const s of servers) s.close();
  });

  it.each([
    ["before the body is read", 0, "admit broke"],
    ["after the body is read", 1, "accept broke after the body was read"],
  ])("%s: 500 Internal error, logged", async (_when, server, message) => {
    const response = await post(servers[server]!.url);
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({ error: "Internal error" });
    expect(logged.some((line) => line.includes(message))).toBe(true);
  });
});

describe("unforeseen errors on an OTLP Export", () => {
  let server: { url: string; close: () => void };
  beforeAll(async () => {
    server = await serve({
      admit: async () => admitted,
      accept: async () => ({}),
      acceptCalls: async () => {
        throw new TypeError("acceptCalls broke");
      },
      abandon: async () => {},
      priceBook: async () => new PriceBook([]),
    });
  });
  afterAll(() => server.close());

  it("500 with a google.rpc.Status (INTERNAL) in the request's encoding, logged", async () => {
    const request = exportOf([genAiSpan()]);
    const response = await fetch(`${server.url}/v1/traces`, {
      method: "POST",
      headers: { "content-type": "application/x-protobuf", authorization: `Bearer ${key}` },
      body: toBinary(ExportTraceServiceRequestSchema, request) as BodyInit,
      signal: AbortSignal.timeout(5000),
    });
    expect(response.status).toBe(500);
    expect(response.headers.get("content-type")).toBe("application/x-protobuf");
    expect(fromBinary(StatusSchema, new Uint8Array(await response.arrayBuffer()))).toMatchObject({ code: 13, message: "Internal error" });
    expect(logged.some((line) => line.includes("acceptCalls broke"))).toBe(true);
  });
});

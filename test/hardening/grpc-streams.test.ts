import { join } from "node:path";
import { type ClientHttp2Session, type ClientHttp2Stream, connect as http2Connect, constants as h2 } from "node:http2";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IngestRequestSchema, TraceService } from "../../gen/calltrace/v1/trace_service_pb.js";
import { startService } from "../../src/app.js";
import { resolveConfig } from "../../src/config/config.js";
import { mintApiKey } from "../../src/auth/api-key.js";
import { createLogger } from "../../src/log/logger.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { refusal } from "../support/rpc-refusal.js";
import { startTestService, type TestService } from "../support/test-service.js";
import { tempDir } from "../support/temp-dir.js";
import { expectServed, sleep } from "./support/attack.js";
import { grpcEnvelope } from "./support/raw-h2.js";

// gRPC calls on their HTTP/2 streams when the client does not wait for the answer: a deadline
// or a cancellation (RST_STREAM) while the store holds the call, a reset as the answer is being
// written, a body trickled past the request timeout, and a shutdown with calls in flight.
const metricsToken = "grpc-streams-metrics";
let service: TestService;
let key: string;

beforeAll(async () => {
  service = await startTestService({ requestTimeoutMs: 2000, metricsPort: 0, metricsToken });
  key = (await service.createKey("pro")).key;
});

const trace = (model = "grpc-streams") => ({
  provider: "openai",
  model,
  tokensIn: 1,
  tokensOut: 2,
  latencyMs: 3,
  costUsd: 0.5,
  apiKey: key,
  status: "success",
});
const bearer = () => ({ authorization: `Bearer ${key}` });
const ingestPath = "/calltrace.v1.TraceService/Ingest";

/** Holds the database's write lock from another connection until released: commits wait meanwhile. */
function lockStore(dataDir: string): () => void {
  const db = new Database(join(dataDir, "calltrace.db"));
  db.exec("BEGIN EXCLUSIVE");
  return () => {
    db.exec("COMMIT");
    db.close();
  };
}

/** An Ingest message in its gRPC envelope. */
const envelopeOf = (t: ReturnType<typeof trace>) =>
  grpcEnvelope(Buffer.from(toBinary(IngestRequestSchema, create(IngestRequestSchema, { trace: t }))));

interface RawAnswer {
  status: number;
  headers: Record<string, unknown>;
  trailers: Record<string, unknown>;
}

/** One gRPC call to Ingest over `session` with `headers` added; `onResponse` may act on the stream when its headers arrive. */
function rawCall(
  session: ClientHttp2Session,
  headers: Record<string, string>,
  body: Buffer,
  onResponse?: (stream: ClientHttp2Stream) => void,
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const stream = session.request({
      ":method": "POST",
      ":path": ingestPath,
      "content-type": "application/grpc",
      te: "trailers",
      ...headers,
    });
    const answer: RawAnswer = { status: 0, headers: {}, trailers: {} };
    stream.on("response", (h) => {
      answer.status = Number(h[":status"]);
      answer.headers = h;
      onResponse?.(stream);
    });
    stream.on("trailers", (t) => (answer.trailers = t));
    stream.on("error", reject);
    stream.on("close", () => resolve(answer));
    stream.resume();
    stream.end(body);
  });
}

async function requestsCounted(status: string): Promise<number> {
  const text = await (
    await fetch(`http://127.0.0.1:${service.metricsPort}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })
  ).text();
  const line = text.split("\n").find((l) => l.startsWith(`calltrace_requests_total{protocol="grpc",status="${status}"} `));
  return line ? Number(line.split(" ")[1]) : 0;
}

describe("gRPC calls the client gives up on", () => {
  for (const [what, giveUp, code] of [
    ["a deadline (grpc-timeout) that passes", () => ({ timeoutMs: 300 }), Code.DeadlineExceeded],
    ["a cancellation (RST_STREAM)", () => ({ signal: AbortSignal.timeout(300) }), Code.Canceled],
  ] as const) {
    it(`${what} while the store waits: the client is told so, the call is counted aborted, and the connection serves the next call`, async () => {
      const client = createClient(TraceService, createGrpcTransport({ baseUrl: service.url }));
      await client.ingest({ trace: trace() }, { headers: bearer() }); // the key is known before the store is locked
      const aborted = await requestsCounted("aborted");
      const release = lockStore(service.config.dataDir);
      try {
        const error = await refusal(client.ingest({ trace: trace() }, { headers: bearer(), ...giveUp() }));
        expect(error.code).toBe(code);
        // The client's RST_STREAM reaches the server a moment later, while the call still waits.
        await expect.poll(() => requestsCounted("aborted"), { timeout: 5000 }).toBe(aborted + 1);
      } finally {
        release();
      }
      expect((await client.ingest({ trace: trace() }, { headers: bearer() })).status).toBe("ok");
      await expectServed(service.url, key);
    });
  }

  it("a reset as soon as the answer's headers arrive, many times over one connection, leaves the connection serving", async () => {
    const session = http2Connect(service.url);
    session.on("error", () => {});
    const body = envelopeOf(trace("reset-mid-answer"));
    const resets = await Promise.all(
      Array.from({ length: 50 }, () => rawCall(session, bearer(), body, (stream) => stream.close(h2.NGHTTP2_CANCEL))),
    );
    expect(resets.every((r) => r.status === 200)).toBe(true);
    const answer = await rawCall(session, bearer(), body);
    expect([answer.status, answer.trailers["grpc-status"]]).toEqual([200, "0"]);
    session.close();
  });

  it("an encoding the service lacks and a malformed grpc-timeout are refused in the trailers, in connect-es's words", async () => {
    const session = http2Connect(service.url);
    session.on("error", () => {});
    const body = envelopeOf(trace());
    const snappy = await rawCall(session, { ...bearer(), "grpc-encoding": "snappy" }, body);
    expect(snappy.status).toBe(200);
    expect(snappy.trailers["grpc-status"]).toBe(String(Code.Unimplemented));
    expect(snappy.trailers["grpc-accept-encoding"]).toBe("gzip,br");
    expect(decodeURIComponent(String(snappy.trailers["grpc-message"]))).toBe(
      'unknown compression "snappy": supported encodings are gzip,br',
    );
    for (const value of ["soon", "123456789S"]) {
      const malformed = await rawCall(session, { ...bearer(), "grpc-timeout": value }, body);
      expect(malformed.trailers["grpc-status"]).toBe(String(Code.InvalidArgument));
      expect(decodeURIComponent(String(malformed.trailers["grpc-message"]))).toBe(`protocol error: invalid grpc timeout value: ${value}`);
    }
    // The same connection still stores a trace.
    expect((await rawCall(session, bearer(), body)).trailers["grpc-status"]).toBe("0");
    session.close();
  });

  it("a body trickled past the request timeout is answered 408, with the request id, and the stream is reset", async () => {
    const session = http2Connect(service.url);
    session.on("error", () => {});
    const stream = session.request({
      ":method": "POST",
      ":path": ingestPath,
      "content-type": "application/grpc",
      te: "trailers",
      "x-request-id": "slow-grpc-body",
      ...bearer(),
    });
    stream.on("error", () => {});
    let headers: Record<string, unknown> | undefined;
    stream.on("response", (h) => (headers = h));
    let body = "";
    stream.on("data", (chunk: Buffer) => (body += chunk.toString()));
    const closed = new Promise<number>((resolve) => stream.once("close", () => resolve(stream.rstCode ?? -1)));
    const envelope = envelopeOf(trace());
    let written = 0;
    let done = false;
    void closed.then(() => (done = true));
    for (; written < envelope.length && !done; written++) {
      stream.write(envelope.subarray(written, written + 1));
      await sleep(50);
    }
    expect(await closed).toBe(h2.NGHTTP2_CANCEL);
    expect(written).toBeLessThan(envelope.length);
    expect(headers?.[":status"]).toBe(408);
    expect(headers?.["x-request-id"]).toBe("slow-grpc-body");
    expect(headers?.["x-content-type-options"]).toBe("nosniff");
    expect(JSON.parse(body)).toEqual({ error: "Request timeout" });
    session.close();
  });
});

describe("graceful shutdown", () => {
  let session: ClientHttp2Session | undefined;
  afterAll(() => session?.destroy());

  it("a gRPC call in flight when the service closes is answered OK after the GOAWAY, and stored", async () => {
    const dataDir = tempDir();
    const config = { ...resolveConfig({}, {}), port: 0, dataDir };
    const running = await startService(config, createLogger("silent"));
    const own = await proKey(dataDir);
    const transport = createGrpcTransport({ baseUrl: running.url });
    const client = createClient(TraceService, transport);
    const headers = { authorization: `Bearer ${own}` };
    const first = { ...trace("before-shutdown"), apiKey: own };
    await client.ingest({ trace: first }, { headers });
    session = http2Connect(running.url);
    const goaway = new Promise<number>((resolve) => session!.once("goaway", (code: number) => resolve(code)));
    const release = lockStore(dataDir);
    let closing: Promise<void> | undefined;
    try {
      const inFlight = rawCall(session, headers, envelopeOf({ ...trace("during-shutdown"), apiKey: own }));
      await sleep(300);
      closing = running.close(5000);
      expect(await goaway).toBe(h2.NGHTTP2_NO_ERROR);
      await sleep(200);
      release();
      const answer = await inFlight;
      expect([answer.status, answer.trailers["grpc-status"]]).toEqual([200, "0"]);
    } finally {
      await closing;
    }
    const store = openSqliteStore(dataDir);
    const models: string[] = [];
    for await (const t of store.exportTraces({})) models.push(t.model);
    await store.close();
    expect(models.sort()).toEqual(["before-shutdown", "during-shutdown"]);
  });
});

/** A key on the pro plan in the store under `dataDir`. */
async function proKey(dataDir: string): Promise<string> {
  const store = openSqliteStore(dataDir);
  const account = (await store.teams.createOrganization({ name: "shutdown", project: { name: "shutdown", plan: "pro" } })).project;
  const minted = mintApiKey();
  await store.keys.createKey({ accountId: account.id, name: "shutdown", hash: minted.hash, prefix: minted.prefix });
  await store.close();
  return minted.plaintext;
}

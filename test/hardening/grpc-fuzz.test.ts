import { connect as http2Connect, type ClientHttp2Session } from "node:http2";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IngestRequestSchema } from "../../gen/calltrace/v1/trace_service_pb.js";
import { startTestService, type TestService } from "../support/test-service.js";
import { expectServed } from "./support/attack.js";
import { grpcEnvelope } from "./support/raw-h2.js";
import { seededRandom as prng } from "../support/seeded-random.js";

// Random and mutated protobuf payloads sent to TraceService.Ingest over h2c, as gRPC and as the
// Connect protocol: every one gets a proper status (the client's fault is INVALID_ARGUMENT, a
// valid trace is OK and stored), never INTERNAL or UNKNOWN, and the service stays up.
const seed = Number(process.env.CALLTRACE_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const cases = 600;
let service: TestService;
let key: string;
let session: ClientHttp2Session;

beforeAll(async () => {
  service = await startTestService({ maxBodyBytes: 4096, plans: { pro: { per_minute: 100_000_000, per_month: 1_000_000_000 } } });
  key = (await service.createKey("pro")).key;
  session = http2Connect(service.url);
  session.on("error", () => {});
});
afterAll(() => session.close());

function validMessage(apiKey: string, model: string): Buffer {
  return Buffer.from(
    toBinary(
      IngestRequestSchema,
      create(IngestRequestSchema, {
        trace: { provider: "openai", model, tokensIn: 1, tokensOut: 2, latencyMs: 3, costUsd: 0.5, apiKey, status: "success" },
      }),
    ),
  );
}

/** A payload: random bytes, or a valid message with bytes flipped, cut, inserted or repeated. */
function payload(random: ReturnType<typeof prng>, n: number): { kind: string; bytes: Buffer } {
  const valid = validMessage(key, `fuzz-${n}`);
  switch (random.int(6)) {
    case 0:
      return { kind: "random", bytes: random.bytes(random.int(200)) };
    case 1: {
      const bytes = Buffer.from(valid);
      for (let i = 0, flips = 1 + random.int(4); i < flips; i++) bytes[random.int(bytes.length)] = random.int(256);
      return { kind: "flipped", bytes };
    }
    case 2:
      return { kind: "truncated", bytes: valid.subarray(0, random.int(valid.length)) };
    case 3: {
      const at = random.int(valid.length);
      return { kind: "inserted", bytes: Buffer.concat([valid.subarray(0, at), random.bytes(1 + random.int(16)), valid.subarray(at)]) };
    }
    case 4:
      return { kind: "repeated", bytes: Buffer.concat([valid, valid.subarray(random.int(valid.length))]) };
    default:
      return { kind: "valid", bytes: valid };
  }
}

function post(headers: Record<string, string>, body: Buffer) {
  return new Promise<{ status: number; headers: Record<string, unknown>; trailers: Record<string, unknown>; body: Buffer }>(
    (resolve, reject) => {
      const stream = session.request({ ":method": "POST", ...headers });
      let status = 0;
      let responseHeaders: Record<string, unknown> = {};
      let trailers: Record<string, unknown> = {};
      const chunks: Buffer[] = [];
      stream.on("response", (h) => {
        status = Number(h[":status"]);
        responseHeaders = h;
      });
      stream.on("trailers", (t) => (trailers = t));
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("error", reject);
      stream.on("close", () => resolve({ status, headers: responseHeaders, trailers, body: Buffer.concat(chunks) }));
      stream.end(body);
    },
  );
}

async function storedCount(): Promise<number> {
  let n = 0;
  for await (const _ of service.store.exportTraces({})) n++;
  return n;
}

/** What a client may be told about a payload it made up: never a server fault. */
const proper = new Set([Code.InvalidArgument, Code.ResourceExhausted, Code.Unimplemented]);

describe(`protobuf fuzzing of Ingest over h2c (seed ${seed}; replay with CALLTRACE_FUZZ_SEED=${seed})`, () => {
  it(`gRPC: ${cases} random and mutated messages each get a proper status; every OK is stored once`, async () => {
    const random = prng(seed);
    const before = await storedCount();
    const accepted: string[] = [];
    const tally = new Map<string, number>();
    for (let n = 0; n < cases; n++) {
      const { kind, bytes } = payload(random, n);
      // Now and then a broken envelope: a wrong length, or the compressed flag without an encoding.
      const dice = random.int(20);
      const frame =
        dice === 0
          ? grpcEnvelope(bytes, bytes.length + random.int(5) - 2)
          : dice === 1
            ? grpcEnvelope(bytes, bytes.length, 1)
            : grpcEnvelope(bytes);
      const response = await post(
        {
          ":path": "/calltrace.v1.TraceService/Ingest",
          "content-type": "application/grpc",
          te: "trailers",
          authorization: `Bearer ${key}`,
        },
        frame,
      );
      const code = Number(response.trailers["grpc-status"] ?? response.headers["grpc-status"]);
      const label = `${dice === 1 ? "compressed-flag" : dice === 0 ? "bad-length" : kind}/${Code[code] ?? code}`;
      tally.set(label, (tally.get(label) ?? 0) + 1);
      expect(response.status, `case ${n} (${kind})`).toBe(200);
      expect(Number.isInteger(code), `case ${n} (${kind}) has a grpc-status`).toBe(true);
      if (code === 0) accepted.push(`fuzz-${n}`);
      else expect(proper.has(code), `case ${n} (${kind}): ${Code[code]} ${String(response.trailers["grpc-message"] ?? "")}`).toBe(true);
    }
    // A mutation may change the model text and still be a valid trace, so traces are counted, not looked up.
    expect(await storedCount(), "every OK is one stored trace").toBe(before + accepted.length);
    expect(accepted.length).toBeGreaterThan(0);
    console.log(`gRPC fuzz, seed ${seed}:`, Object.fromEntries([...tally].sort()));
    await expectServed(service.url, key);
  }, 120_000);

  it(`Connect: ${cases / 2} random and mutated bodies each get 200 or a 4xx with a Connect error body`, async () => {
    const random = prng(seed + 1);
    for (let n = 0; n < cases / 2; n++) {
      const { kind, bytes } = payload(random, cases + n);
      const response = await post(
        { ":path": "/calltrace.v1.TraceService/Ingest", "content-type": "application/proto", authorization: `Bearer ${key}` },
        bytes,
      );
      if (response.status === 200) continue;
      expect([400, 413, 429], `case ${n} (${kind}): ${response.status} ${response.body.toString()}`).toContain(response.status);
      expect(["invalid_argument", "resource_exhausted"]).toContain((JSON.parse(response.body.toString()) as { code: string }).code);
    }
    await expectServed(service.url, key);
  }, 120_000);
});

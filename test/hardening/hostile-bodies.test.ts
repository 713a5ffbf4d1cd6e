import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { beforeAll, describe, expect, it } from "vitest";
import { IngestRequestSchema, TraceService } from "../../gen/calltrace/v1/trace_service_pb.js";
import { downloadLines } from "../../src/download/trace-lines.js";
import { postTrace, startTestService, traceBody, type TestService } from "../support/test-service.js";
import { expectServed } from "./support/attack.js";

// Hostile JSON and hostile strings: parse cost is bounded by the body limit, strings with NUL,
// control characters or broken encodings are stored exactly as the contract allows or refused
// with 400, and the CSV export stays parseable and neutralises formulas.
let service: TestService;
let key: string;

beforeAll(async () => {
  service = await startTestService({ plans: { pro: { per_minute: 1_000_000, per_month: 1_000_000_000 } } });
  key = (await service.createKey("pro")).key;
});

async function stored() {
  const traces = [];
  for await (const t of service.store.exportTraces({})) traces.push(t);
  return traces;
}

async function csvExport(): Promise<string[][]> {
  let text = "";
  for await (const line of downloadLines(service.store.exportTraces({}), "csv")) text += line;
  return parseCsv(text);
}

/** A strict RFC 4180 parser: quoted cells may hold anything, unquoted ones no quote, comma or line break. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let i = 0;
  while (i < text.length) {
    let cell = "";
    if (text[i] === '"') {
      i++;
      for (;;) {
        if (i >= text.length) throw new Error("unterminated quoted cell");
        if (text[i] === '"') {
          if (text[i + 1] === '"') {
            cell += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        cell += text[i++];
      }
    } else {
      while (i < text.length && text[i] !== "," && text[i] !== "\n") {
        if (text[i] === '"' || text[i] === "\r") throw new Error(`bare ${JSON.stringify(text[i])} in an unquoted cell at ${i}`);
        cell += text[i++];
      }
    }
    row.push(cell);
    if (text[i] === ",") i++;
    else if (text[i] === "\n") {
      rows.push(row);
      row = [];
      i++;
    } else if (i < text.length) throw new Error(`unexpected ${JSON.stringify(text[i])} at ${i}`);
  }
  return rows;
}

describe("deeply nested or huge JSON costs no more than the body limit allows", () => {
  it("64 KiB of nested arrays is a 400, not a stack overflow", async () => {
    const response = await postTrace(service.url, null, { key, raw: "[".repeat(65_000) });
    expect(response.status).toBe(400);
    expect((await response.json()).error).toBe("Validation error");
  });

  it("a closed 30,000-deep nesting in an unknown field is ignored (D4) and the trace stored", async () => {
    const deep = "[".repeat(30_000) + "]".repeat(30_000);
    const body = JSON.stringify(traceBody(key)).replace(/^\{/, `{"deep":${deep},`);
    expect((await postTrace(service.url, null, { key, raw: body })).status).toBe(202);
  });

  it("deep nesting over Connect JSON is INVALID_ARGUMENT", async () => {
    const response = await fetch(`${service.url}/calltrace.v1.TraceService/Ingest`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: `{"trace":${"[".repeat(60_000)}`,
    });
    expect(response.status).toBe(400);
    expect((await response.json()).code).toBe("invalid_argument");
  });

  it("a body of 4,000 keys and a number like 1e999 are 400s", async () => {
    const keys = Object.fromEntries(Array.from({ length: 4000 }, (_, i) => [`k${i}`, i]));
    expect((await postTrace(service.url, { ...keys, ...traceBody(key, { cost_usd: undefined }) }, { key })).status).toBe(400);
    const infinite = JSON.stringify(traceBody(key)).replace(/"cost_usd":[^,]+/, '"cost_usd":1e999');
    const response = await postTrace(service.url, null, { key, raw: infinite });
    expect(response.status).toBe(400);
    expect((await response.json()).details).toMatch(/cost_usd/);
  });

  it("a body over the limit is 413 however it is nested", async () => {
    expect((await postTrace(service.url, null, { key, raw: "[".repeat(70_000) })).status).toBe(413);
    await expectServed(service.url, key);
  });
});

describe("hostile strings are stored safely or refused, never corrupting the store or the export", () => {
  it("bytes that are not UTF-8 are a 400 on REST", async () => {
    const body = Buffer.concat([
      Buffer.from(JSON.stringify(traceBody(key)).replace(/"gpt-4o-2024-08-06"/, '"gpt-')),
      Buffer.from([0xc3, 0x28, 0xff]),
      Buffer.from('"}'),
    ]);
    const fixed = Buffer.from(JSON.stringify(traceBody(key, { model: "PLACEHOLDER" })));
    const at = fixed.indexOf("PLACEHOLDER");
    const invalid = Buffer.concat([
      fixed.subarray(0, at),
      Buffer.from([0xc3, 0x28, 0xff, 0xfe]),
      fixed.subarray(at + "PLACEHOLDER".length),
    ]);
    for (const raw of [body, invalid]) {
      const response = await postTrace(service.url, null, { key, raw });
      expect(response.status).toBe(400);
      expect((await response.json()).details).toBe("request body is not valid UTF-8");
    }
  });

  it("NUL, control characters, quotes and line breaks are stored exactly and export as one parseable CSV row each", async () => {
    const model = 'gpt\u0000-4o\u0001\u001b[31m\u007f,"quoted"\r\nnext line';
    const error = "bad\u0000thing\ttab\u2028sep\u{1f600}";
    const response = await postTrace(service.url, traceBody(key, { model, status: "error", error }), { key });
    expect(response.status).toBe(202);
    const trace = (await stored()).find((t) => t.model === model);
    expect(trace?.error).toBe(error);
    const rows = await csvExport();
    const header = rows[0]!;
    for (const row of rows) expect(row).toHaveLength(header.length);
    const row = rows.find((r) => r[header.indexOf("model")] === model);
    expect(row?.[header.indexOf("error")]).toBe(error);
  });

  it("a lone UTF-16 surrogate (a JSON \\ud800 escape, which has no UTF-8 form) is a 400 naming the field", async () => {
    const raw = JSON.stringify(traceBody(key, { model: "PLACEHOLDER-lone" })).replace("PLACEHOLDER", "\\ud800");
    const response = await postTrace(service.url, null, { key, raw });
    expect(response.status).toBe(400);
    expect((await response.json()).details).toBe("model: must be valid Unicode text (a lone surrogate)");
    const client = createClient(TraceService, createConnectTransport({ baseUrl: service.url, httpVersion: "1.1", useBinaryFormat: false }));
    const error = await client
      .ingest({ trace: { ...rpcTrace(key), error: "\ud800", status: "error" } }, { headers: { authorization: `Bearer ${key}` } })
      .then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
    expect(error?.code).toBe(Code.InvalidArgument);
  });

  it("a protobuf string that is not UTF-8 over gRPC is INVALID_ARGUMENT, or stored as valid UTF-8", async () => {
    const valid = toBinary(IngestRequestSchema, create(IngestRequestSchema, { trace: { ...rpcTrace(key), model: "ZZZZ" } }));
    const at = Buffer.from(valid).indexOf("ZZZZ");
    const bytes = Buffer.from(valid);
    bytes.set([0xc3, 0x28, 0xff, 0xfe], at);
    const response = await fetch(`${service.url}/calltrace.v1.TraceService/Ingest`, {
      method: "POST",
      headers: { "content-type": "application/proto", authorization: `Bearer ${key}` },
      body: bytes,
    });
    if (response.status !== 200) {
      expect(response.status).toBe(400);
      expect((await response.json()).code).toBe("invalid_argument");
    } else {
      for (const t of await stored()) expect(Buffer.from(t.model, "utf8").toString("utf8")).toBe(t.model);
    }
    await expectServed(service.url, key);
  });

  it("over gRPC and Connect, control characters in model and error are stored exactly too", async () => {
    for (const transport of [
      createGrpcTransport({ baseUrl: service.url }),
      createConnectTransport({ baseUrl: service.url, httpVersion: "1.1" }),
    ]) {
      const client = createClient(TraceService, transport);
      const model = `rpc\u0000\u0007${Math.random()}`;
      const result = await client
        .ingest(
          { trace: { ...rpcTrace(key), model, status: "error", error: "\u0000=cmd" } },
          { headers: { authorization: `Bearer ${key}` } },
        )
        .catch((e: unknown) => ConnectError.from(e));
      expect(result instanceof ConnectError ? result.code : "ok").toBe("ok");
      expect((await stored()).find((t) => t.model === model)?.error).toBe("\u0000=cmd");
    }
    expect(Code.InvalidArgument).toBe(3);
  });
});

describe("CSV injection: the export neutralises cells a spreadsheet would run", () => {
  const attacks = ['=HYPERLINK("http://x","y")', "+1+2", "-2+3", "@SUM(A1)", "\t=1", "\r=1", "\n=1", "\uff1dcmd", " =1"];
  it.each(attacks)("a model or error of %j exports as text", async (attack) => {
    const model = `${attack}`;
    const response = await postTrace(service.url, traceBody(key, { model, status: "error", error: attack }), { key });
    expect(response.status).toBe(202);
    const rows = await csvExport();
    const header = rows[0]!;
    const dangerous = /^[=+\-@\t\r\n\uff1d\uff0b\uff0d\uff20]/;
    const matches = rows.filter((r) => r[header.indexOf("model")]?.replace(/^'/, "") === model);
    expect(matches.length).toBeGreaterThan(0);
    for (const row of matches) {
      for (const column of ["model", "error"]) {
        const cell = row[header.indexOf(column)]!;
        expect(cell).not.toMatch(dangerous);
        expect(cell.trimStart()).not.toMatch(/^[=+\-@]/);
      }
    }
  });
});

function rpcTrace(apiKey: string) {
  return { provider: "openai", model: "gpt-4o", tokensIn: 1, tokensOut: 2, latencyMs: 3, costUsd: 0.1, apiKey, status: "success" };
}

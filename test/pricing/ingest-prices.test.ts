import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { TraceFilterSchema } from "../../gen/calltrace/v1/query_pb.js";
import { PriceCheck, type StoredTrace } from "../../gen/calltrace/v1/trace_pb.js";
import { postTrace, startTestService, traceBody, type TestService } from "../support/test-service.js";

let service: TestService;
let key: string;
let accountId: string;

beforeAll(async () => {
  service = await startTestService();
  ({ key, accountId } = await service.createKey("free"));
});

/** Posts one trace over REST and answers it as stored. */
async function ingest(overrides: Record<string, unknown>): Promise<StoredTrace> {
  const model = `${String(overrides.model ?? "gpt-4o-2024-08-06")}`;
  const response = await postTrace(service.url, traceBody(key, overrides), { key });
  expect(response.status).toBe(202);
  const stored: StoredTrace[] = [];
  for await (const t of service.store.exportTraces({ accountId })) if (t.model === model) stored.push(t);
  return stored.at(-1)!;
}

describe("a spec-path trace keeps the server's own price beside the client's cost", () => {
  it("matches when the client priced it as the table does", async () => {
    const t = await ingest({});
    expect(t.costUsd).toBe(0.0065);
    expect(t.serverCostUsd).toBe((1200 * 2.5 + 350 * 10) / 1e6);
    expect(t.priceCheck).toBe(PriceCheck.MATCH);
  });

  it("matches within 1 % (a client that rounds), and is a mismatch beyond", async () => {
    expect((await ingest({ model: "gpt-4o", cost_usd: 0.00655 })).priceCheck).toBe(PriceCheck.MATCH);
    const off = await ingest({ model: "gpt-4o-2024-11-20", cost_usd: 0.0067 });
    expect(off.priceCheck).toBe(PriceCheck.MISMATCH);
    expect(off.serverCostUsd).toBe(0.0065);
  });

  it("prices cached and written input at their rates: a client charging them as plain input is flagged", async () => {
    const t = await ingest({
      provider: "anthropic",
      model: "claude-sonnet-4-5-20250929",
      tokens_in: 100_000,
      tokens_cached_in: 90_000,
      tokens_cache_write: 5_000,
      tokens_out: 500,
      cost_usd: (100_000 * 3 + 500 * 15) / 1e6,
    });
    expect(t.serverCostUsd).toBe((5_000 * 3 + 90_000 * 0.3 + 5_000 * 3.75 + 500 * 15) / 1e6);
    expect(t.priceCheck).toBe(PriceCheck.MISMATCH);
  });

  it("prices a long Gemini 2.5 Pro call at the tier above 200k input tokens", async () => {
    const cost = (250_000 * 2.5 + 1_000 * 15) / 1e6;
    const t = await ingest({ provider: "gemini", model: "models/gemini-2.5-pro", tokens_in: 250_000, tokens_out: 1_000, cost_usd: cost });
    expect(t.serverCostUsd).toBe(cost);
    expect(t.priceCheck).toBe(PriceCheck.MATCH);
  });

  it("flags a model the table does not know, rather than guess from a name it starts with", async () => {
    const t = await ingest({ model: "o3-deep-research-mini-2027-01-01", cost_usd: 0.01 });
    expect(t.serverCostUsd).toBeUndefined();
    expect(t.priceCheck).toBe(PriceCheck.UNPRICED);
    expect(t.costUsd).toBe(0.01);
  });

  it("counts unpriced and mismatched calls in the usage totals the dashboard reads", async () => {
    const totals = await service.store.usageTotals(accountId, create(TraceFilterSchema, {}));
    expect(totals.calls).toBe(6n);
    expect(totals.unpricedCalls).toBe(1n);
    expect(totals.mismatchedCalls).toBe(2n);
    const byModel = await service.store.usageByModel(accountId, create(TraceFilterSchema, {}));
    expect(byModel.find((m) => m.model === "o3-deep-research-mini-2027-01-01")?.totals?.unpricedCalls).toBe(1n);
  });
});

describe("billing modes are priced by the server at their own rates (sdk/pricing/models.json)", () => {
  const table = JSON.parse(readFileSync(new URL("../../sdk/pricing/models.json", import.meta.url), "utf8"));
  const gpt54 = table.models.openai["gpt-5.4"];
  const sonnet = table.models.anthropic["claude-sonnet-4-5"];
  const flash = table.models.gemini["gemini-2.5-flash"];

  it("an OpenAI flex call at the flex rates, a priority call at the priority rates", async () => {
    const flexCost = (10_000 * gpt54.service_tiers.flex.input + 1_000 * gpt54.service_tiers.flex.output) / 1e6;
    const flex = await ingest({ model: "gpt-5.4", service_tier: "flex", tokens_in: 10_000, tokens_out: 1_000, cost_usd: flexCost });
    expect(flex.serverCostUsd).toBe(flexCost);
    expect(flex.priceCheck).toBe(PriceCheck.MATCH);
    expect(flex.serviceTier).toBe("flex");
    // A client that priced a priority call at the standard rates is flagged.
    const standardCost = (10_000 * gpt54.input + 1_000 * gpt54.output) / 1e6;
    const priority = await ingest({ model: "gpt-5.4-2026-03-05", service_tier: "priority", tokens_in: 10_000, tokens_out: 1_000, cost_usd: standardCost });
    expect(priority.serverCostUsd).toBe((10_000 * gpt54.service_tiers.priority.input + 1_000 * gpt54.service_tiers.priority.output) / 1e6);
    expect(priority.priceCheck).toBe(PriceCheck.MISMATCH);
  });

  it("Anthropic 1-hour cache writes and web searches", async () => {
    const cost = (1_000 * sonnet.input + 3_000 * sonnet.cache_write + 6_000 * sonnet.cache_write_1h + 500 * sonnet.output) / 1e6 + (2 * sonnet.web_search_per_1k) / 1000;
    const t = await ingest({
      provider: "anthropic",
      model: "claude-sonnet-4-5-20250929",
      tokens_in: 10_000,
      tokens_cache_write: 9_000,
      tokens_cache_write_1h: 6_000,
      tokens_out: 500,
      web_search_requests: 2,
      cost_usd: cost,
    });
    expect(t.serverCostUsd).toBe(cost);
    expect(t.priceCheck).toBe(PriceCheck.MATCH);
    expect(t).toMatchObject({ tokensCacheWrite1h: 6_000, webSearchRequests: 2 });
  });

  it("Gemini audio input at the audio rate", async () => {
    const cost = (1_000 * flash.input + 3_000 * flash.input_audio + 100 * flash.output) / 1e6;
    const t = await ingest({ provider: "gemini", model: "gemini-2.5-flash", tokens_in: 4_000, tokens_audio_in: 3_000, tokens_out: 100, cost_usd: cost });
    expect(t.serverCostUsd).toBe(cost);
    expect(t.priceCheck).toBe(PriceCheck.MATCH);
  });

  it("a billing mode the table has no rate for is unpriced, not charged at another rate", async () => {
    const t = await ingest({ provider: "gemini", model: "gemini-2.5-flash", service_tier: "priority", tokens_in: 100, tokens_out: 10, cost_usd: 0.001 });
    expect(t.serverCostUsd).toBeUndefined();
    expect(t.priceCheck).toBe(PriceCheck.UNPRICED);
  });

  it("a failed call without tokens costs 0 on the server too and is no mismatch, whatever its model", async () => {
    for (const model of ["gpt-4o", "gpt-99-unknown"]) {
      const t = await ingest({ model, status: "error", error: "429 Too Many Requests", tokens_in: 0, tokens_out: 0, cost_usd: 0 });
      expect(t.serverCostUsd).toBe(0);
      expect(t.priceCheck).toBe(PriceCheck.MATCH);
    }
  });
});

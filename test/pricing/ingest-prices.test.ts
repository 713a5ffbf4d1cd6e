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

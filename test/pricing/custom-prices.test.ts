import { beforeAll, describe, expect, it } from "vitest";
import { PriceCheck, type StoredTrace } from "../../gen/calltrace/v1/trace_pb.js";
import { customPriceProblems, projectCost } from "../../src/pricing/custom-prices.js";
import { PriceBook } from "../../src/pricing/price-match.js";
import { customPricesRefreshMs } from "../../src/pricing/project-prices.js";
import type { CustomPriceInput, CustomPriceRecord } from "../../src/store/price-store.js";
import { exportOf, genAiSpan, postExport, storedOtlp } from "../otlp/otlp-support.js";
import { postTrace, startTestService, traceBody, type TestService } from "../support/test-service.js";

let serial = 0;
const day = 86_400_000;
function price(fields: Partial<CustomPriceRecord>): CustomPriceRecord {
  serial += 1;
  return {
    id: `prc_${serial}`,
    projectId: "prj_x",
    provider: "openai",
    matchKind: "exact",
    pattern: "gpt-4o",
    price: { input: serial, output: serial },
    effectiveFrom: undefined,
    effectiveUntil: undefined,
    createdAt: new Date(1_000_000 + serial),
    updatedAt: new Date(1_000_000 + serial),
    ...fields,
  };
}

describe("which custom price applies", () => {
  const now = new Date("2026-11-26T12:00:00Z");
  const exact = price({ matchKind: "exact", pattern: "GPT-4o-2024-08-06" });
  const prefix = price({ matchKind: "prefix", pattern: "gpt-4o" });
  const regex = price({ matchKind: "regex", pattern: "^gpt-4o(-mini)?(-\\d{4}-\\d{2}-\\d{2})?$" });
  const oldPrefix = price({ matchKind: "prefix", pattern: "gpt-4o", effectiveFrom: new Date(now.getTime() - 30 * day) });
  const newPrefix = price({ matchKind: "prefix", pattern: "gpt-4o", effectiveFrom: new Date(now.getTime() - day) });
  const expired = price({ matchKind: "exact", pattern: "gpt-4o-mini", effectiveUntil: new Date(now.getTime() - day) });
  const future = price({ matchKind: "exact", pattern: "gpt-4o-mini", effectiveFrom: new Date(now.getTime() + day) });
  const anthropic = price({ provider: "anthropic", matchKind: "regex", pattern: "." });
  const book = new PriceBook([regex, prefix, exact, oldPrefix, newPrefix, expired, future, anthropic]);

  it("exact beats prefix beats regex; among prefixes the newest effective-from; the provider must agree", () => {
    expect(book.find("openai", "gpt-4o-2024-08-06", now)).toBe(exact);
    expect(book.find("openai", " gpt-4O-2024-08-06 ", now)).toBe(exact);
    expect(book.find("openai", "gpt-4o-2024-11-20", now)).toBe(newPrefix);
    expect(book.find("openai", "gpt-4o-mini", now)).toBe(newPrefix);
    expect(book.find("openai", "o3", now)).toBeUndefined();
    expect(book.find("anthropic", "gpt-4o", now)).toBe(anthropic);
    expect(book.find("gemini", "gpt-4o", now)).toBeUndefined();
  });

  it("honours the effective range: from inclusive, until exclusive", () => {
    const only = new PriceBook([expired, future]);
    expect(only.find("openai", "gpt-4o-mini", now)).toBeUndefined();
    expect(only.find("openai", "gpt-4o-mini", new Date(now.getTime() - 2 * day))).toBe(expired);
    expect(only.find("openai", "gpt-4o-mini", expired.effectiveUntil!)).toBeUndefined();
    expect(only.find("openai", "gpt-4o-mini", future.effectiveFrom!)).toBe(future);
    // Without prefixes of newer dates, an older one applies in its own time.
    expect(new PriceBook([oldPrefix, newPrefix]).find("openai", "gpt-4o", new Date(now.getTime() - 2 * day))).toBe(oldPrefix);
  });

  it("a regex matches anywhere unless anchored, case-insensitively, in linear time (RE2)", () => {
    const loose = new PriceBook([price({ matchKind: "regex", pattern: "turbo" })]);
    expect(loose.find("openai", "my-Turbo-deployment", now)).toBeDefined();
    // Catastrophic for a backtracking engine: (a+)+$ against a long run of a's ending in b.
    const nested = new PriceBook([price({ matchKind: "regex", pattern: "^(a+)+$" })]);
    expect(nested.find("openai", `${"a".repeat(100_000)}b`, now)).toBeUndefined();
    expect(nested.find("openai", "aaaa", now)).toBeDefined();
  });

  it("a project's price beats the catalog, and a price without a rate the call needs leaves it unpriced", () => {
    const usage = { provider: "openai", model: "gpt-4o", tokensIn: 1_000_000, tokensOut: 1_000_000 };
    const discount = price({ pattern: "gpt-4o", price: { input: 1, output: 2 } });
    expect(projectCost(new PriceBook([discount]), usage, now)).toBe(3);
    expect(projectCost(new PriceBook([]), usage, now)).toBe(12.5);
    expect(projectCost(new PriceBook([discount]), { ...usage, serviceTier: "batch" }, now)).toBeUndefined();
    expect(projectCost(new PriceBook([discount]), { ...usage, model: "gpt-4o-mini" }, now)).toBe(0.75);
    const tiered = price({ pattern: "gpt-4o", price: { input: 1, output: 2, service_tiers: { batch: { input: 0.5, output: 1 } } } });
    expect(projectCost(new PriceBook([tiered]), { ...usage, serviceTier: "batch" }, now)).toBe(1.5);
  });
});

describe("a custom price is checked before it is kept", () => {
  const valid: CustomPriceInput = { provider: "openai", matchKind: "regex", pattern: "^ft:gpt-4o:acme:", price: { input: 1, output: 2 }, effectiveFrom: undefined, effectiveUntil: undefined };
  it.each([
    [{ provider: "mistral" }, "provider", "must be openai, anthropic or gemini"],
    [{ matchKind: "glob" }, "match", "must be exact, prefix or regex"],
    [{ pattern: " " }, "pattern", "must not be empty"],
    [{ pattern: "x".repeat(257) }, "pattern", "must be at most 256 characters"],
    [{ pattern: "(a)\\1" }, "pattern", "is not a valid RE2 regular expression: error parsing regexp: invalid escape sequence: `\\1`"],
    [{ pattern: "(?=gpt)" }, "pattern", "is not a valid RE2 regular expression"],
    [{ price: { input: -1, output: 2 } }, "price", "needs finite, non-negative input and output"],
    [{ price: { input: 1, output: 2, tiers: [{ above_input_tokens: 0, input: 1, output: 1 }] } }, "price", "needs a positive integer above_input_tokens"],
    [{ effectiveFrom: new Date(2000), effectiveUntil: new Date(1000) }, "effective_until", "must be after effective_from"],
  ])("%j: %s %s", (change, field, problem) => {
    expect(customPriceProblems(valid)).toEqual([]);
    const problems = customPriceProblems({ ...valid, ...change } as CustomPriceInput);
    expect(problems).toHaveLength(1);
    expect(problems[0]!.field).toBe(field);
    expect(problems[0]!.problem).toContain(problem);
  });
});

describe("the service prices calls with the project's prices", () => {
  let service: TestService;
  let key: string;
  let accountId: string;
  beforeAll(async () => {
    service = await startTestService({ plans: { pro: { per_minute: 100_000, per_month: 1_000_000 } } });
    ({ key, accountId } = await service.createKey("pro"));
  });

  const apiTrace = async (model: string, costUsd: number, extra: Record<string, unknown> = {}): Promise<StoredTrace> => {
    const marker = `m-${Math.random()}`;
    const body = traceBody(key, { model, tokens_in: 1_000_000, tokens_out: 1_000_000, cost_usd: costUsd, tags: [marker], ...extra });
    expect((await postTrace(service.url, body, { key })).status).toBe(202);
    for await (const t of service.store.exportTraces({ accountId })) if (t.tags.includes(marker)) return t;
    throw new Error("trace not stored");
  };

  it("a negotiated discount defined through another connection to the store is a MATCH within the refresh time, and OTLP spans of a custom model are priced", async () => {
    // The catalog's gpt-4o: $2.50 and $10 per million. The client pays $1 and $2.
    expect((await apiTrace("gpt-4o", 3)).priceCheck).toBe(PriceCheck.MISMATCH);
    const before = genAiSpan({ attributes: { "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "acme-ft-7", "gen_ai.usage.input_tokens": 1000, "gen_ai.usage.output_tokens": 1000 } });
    expect((await postExport(service.url, key, exportOf([before]))).status).toBe(200);

    // The service's own connection is another instance's view: it learns of the change by re-reading.
    const input: CustomPriceInput = { provider: "openai", matchKind: "exact", pattern: "gpt-4o", price: { input: 1, output: 2 }, effectiveFrom: undefined, effectiveUntil: undefined };
    await service.store.prices.createPrice(accountId, input);
    await service.store.prices.createPrice(accountId, { ...input, matchKind: "prefix", pattern: "acme-ft-", price: { input: 4, output: 6 } });
    const changedAt = Date.now();
    let trace = await apiTrace("gpt-4o", 3);
    while (trace.priceCheck !== PriceCheck.MATCH && Date.now() - changedAt < 2 * customPricesRefreshMs + 3000) {
      await new Promise((r) => setTimeout(r, 200));
      trace = await apiTrace("gpt-4o", 3);
    }
    expect(trace).toMatchObject({ priceCheck: PriceCheck.MATCH, serverCostUsd: 3, costUsd: 3 });

    const after = genAiSpan({ attributes: { "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "acme-ft-7", "gen_ai.usage.input_tokens": 1000, "gen_ai.usage.output_tokens": 1000 } });
    expect((await postExport(service.url, key, exportOf([after]))).status).toBe(200);
    const spans = await storedOtlp(service.store, accountId);
    const bySpan = (span: typeof before) => spans.find((t) => t.otlpSpanId === Buffer.from(span.spanId).toString("hex"))!;
    expect(bySpan(before)).toMatchObject({ priceCheck: PriceCheck.UNPRICED, costUsd: 0 });
    expect(bySpan(after)).toMatchObject({ priceCheck: PriceCheck.SERVER, costUsd: 0.01, serverCostUsd: 0.01 });
  });

  it("a price applies from its effective date: a call made before it (called_at) keeps the catalog's price", async () => {
    const from = new Date(Date.now() - 3_600_000);
    await service.store.prices.createPrice(accountId, {
      provider: "openai",
      matchKind: "exact",
      pattern: "gpt-4o-mini",
      price: { input: 0.1, output: 0.1 },
      effectiveFrom: from,
      effectiveUntil: undefined,
    });
    const deadline = Date.now() + 2 * customPricesRefreshMs + 3000;
    let now = await apiTrace("gpt-4o-mini", 0.2);
    while (now.serverCostUsd !== 0.2 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      now = await apiTrace("gpt-4o-mini", 0.2);
    }
    expect(now).toMatchObject({ serverCostUsd: 0.2, priceCheck: PriceCheck.MATCH });
    const earlier = await apiTrace("gpt-4o-mini", 0.75, { called_at: new Date(from.getTime() - 60_000).toISOString() });
    expect(earlier).toMatchObject({ serverCostUsd: 0.75, priceCheck: PriceCheck.MATCH });
  });
});

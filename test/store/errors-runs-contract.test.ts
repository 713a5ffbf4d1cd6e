import { create } from "@bufbuild/protobuf";
import { type Timestamp, timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TraceFilterSchema } from "../../gen/calltrace/v1/query_pb.js";
import { StoredTraceSchema, type StoredTrace, TraceSource } from "../../gen/calltrace/v1/trace_pb.js";
import { normaliseError } from "../../src/store/error-group.js";
import { callSpanMs } from "../../src/store/run-id.js";
import type { RunsAfter } from "../../src/store/run-summary.js";
import type { Store } from "../../src/store/store.js";
import { failures } from "../support/error-traces.js";
import { call } from "../support/stored-call.js";
import { storeAdapters } from "../support/store-adapters.js";

/** The Errors and Runs views' reads: one contract for every store adapter. */
const adapters = storeAdapters();

const hour = 3_600_000;
const day = 24 * hour;
const filter = (init: Parameters<typeof create<typeof TraceFilterSchema>>[1] = {}) => create(TraceFilterSchema, init);
const ms = (t: Timestamp | undefined) => timestampMs(t!);

/** What the view should say, worked out here from the calls themselves. */
function expectedGroups(calls: StoredTrace[]) {
  const groups = new Map<
    string,
    { calls: number; first: number; last: number; models: Set<string>; keys: Set<string>; users: Set<string>; cost: number }
  >();
  for (const t of calls) {
    if (t.status !== "error") continue;
    const message = normaliseError(t.error);
    const at = timestampMs(t.receivedAt!);
    const g = groups.get(message) ?? { calls: 0, first: at, last: at, models: new Set(), keys: new Set(), users: new Set(), cost: 0 };
    g.calls += 1;
    g.cost += t.costUsd;
    g.first = Math.min(g.first, at);
    g.last = Math.max(g.last, at);
    g.models.add(t.model);
    g.keys.add(t.keyId);
    if (t.userId) g.users.add(t.userId);
    groups.set(message, g);
  }
  return [...groups].sort((a, b) => b[1].calls - a[1].calls);
}

describe.each(adapters)("errors and runs contract: %s", (_name, open) => {
  let store: Store;
  beforeAll(async () => {
    ({ store } = await open());
  });
  afterAll(async () => {
    await store?.close();
  });

  it("ranks failed calls by masked message, with share, first and last seen, and the models, keys and users affected", async () => {
    const now = Date.now();
    const calls = failures("acc_err", now);
    await store.writeBatch(calls.map((trace) => ({ trace, idempotencyKey: undefined })));
    await store.writeBatch(failures("acc_other", now).map((trace) => ({ trace, idempotencyKey: undefined })));
    const range = filter({ since: timestampFromMs(now - 4 * day), until: timestampFromMs(now + hour) });
    const answer = await store.errorGroups("acc_err", range, 50);
    const expected = expectedGroups(calls);
    expect(answer.totalErrors).toBe(18);
    expect(answer.totalGroups).toBe(expected.length);
    expect(answer.groups.map((g) => [g.message, Number(g.calls)])).toEqual(expected.map(([m, g]) => [m, g.calls]));
    const [top] = answer.groups;
    const [, want] = expected[0]!;
    expect(top!.message).toBe("<num> Rate limit reached for requests: limit <num>, request id <id>");
    expect(top!.id).toMatch(/^[0-9a-f]{16}$/);
    expect(top!.share).toBeCloseTo(12 / 18, 10);
    expect(top!.costUsd).toBeCloseTo(want.cost, 10);
    expect(ms(top!.firstSeen)).toBe(want.first);
    expect(ms(top!.lastSeen)).toBe(want.last);
    expect(top!.models.map((v) => [v.value, Number(v.calls)])).toEqual([
      ["gpt-4o", 9],
      ["gpt-4o-mini", 3],
    ]);
    expect(Number(top!.keyCount)).toBe(2);
    expect(Number(top!.userCount)).toBe(5);
    expect(top!.users.length).toBe(5);
    expect(answer.groups.find((g) => g.message === "(no message)")!.calls).toBe(1n);

    // Under a filter: only the failures it selects.
    const mini = await store.errorGroups("acc_err", filter({ ...range, model: "gpt-4o-mini" }), 50);
    expect(mini.totalErrors).toBe(4);
    expect(mini.groups.map((g) => Number(g.calls))).toEqual([3, 1]);
    // Under a key and a model name: those calls' users, models and keys alone (the embedded store reads them from its roll-ups, D70).
    const keyed = await store.errorGroups("acc_err", filter({ ...range, keyId: "key_a", modelContains: "MINI" }), 50);
    const listed = (values: { value: string }[]) => values.map((v) => v.value).sort();
    expect(keyed.groups.map((g) => [g.message, Number(g.calls), listed(g.users), listed(g.models), listed(g.keys)])).toEqual(
      expectedGroups(calls.filter((t) => t.keyId === "key_a" && t.model.includes("mini"))).map(([m, g]) => [
        m,
        g.calls,
        [...g.users].sort(),
        [...g.models].sort(),
        [...g.keys].sort(),
      ]),
    );
    expect(listed(keyed.groups[0]!.users)).toEqual(["user-0", "user-3", "user-4"]);
    const byUser = await store.errorGroups("acc_err", filter({ ...range, userId: "user-0" }), 50);
    expect(byUser.groups.map((g) => [g.id, Number(g.calls)])).toEqual([[top!.id, 3]]);
    // A range of a single day's part.
    const lastHour = await store.errorGroups(
      "acc_err",
      filter({ since: timestampFromMs(now - hour), until: timestampFromMs(now + hour) }),
      50,
    );
    expect(lastHour.totalErrors).toBe(calls.filter((t) => t.status === "error" && timestampMs(t.receivedAt!) >= now - hour).length);
    // The limit keeps the first groups; the totals still count them all.
    const first = await store.errorGroups("acc_err", range, 1);
    expect(first.groups.map((g) => g.id)).toEqual([top!.id]);
    expect(first.totalGroups).toBe(expected.length);
  });

  it("lists exactly a group's calls on the Traces page's group filter", async () => {
    const now = Date.now();
    const range = { since: timestampFromMs(now - 4 * day), until: timestampFromMs(now + hour) };
    const { groups } = await store.errorGroups("acc_err", filter(range), 50);
    for (const group of groups) {
      const page = await store.listTraces("acc_err", filter({ ...range, errorGroup: group.id }), { pageSize: 100 });
      expect(page.traces).toHaveLength(Number(group.calls));
      expect(new Set(page.traces.map((t) => normaliseError(t.error)))).toEqual(new Set([group.message]));
    }
    expect((await store.listTraces("acc_other", filter({ ...range, errorGroup: groups[0]!.id }), { pageSize: 100 })).traces).toHaveLength(
      12,
    );
    expect(
      (await store.listTraces("acc_err", filter({ ...range, errorGroup: "0123456789abcdef" }), { pageSize: 100 })).traces,
    ).toHaveLength(0);
  });

  it("forms runs from an OTLP trace id, or else a session id, with totals, start, end and errors", async () => {
    const now = Date.now();
    const otlp = "a".repeat(32);
    const calls = [
      // An agent run of three OTLP calls, one of them failed; the middle one also names a session, which does not split it.
      call({ accountId: "acc_run", at: now - 50_000, latencyMs: 4000, otlpTraceId: otlp, source: TraceSource.OTLP, costUsd: 0.01 }),
      call({
        accountId: "acc_run",
        at: now - 40_000,
        latencyMs: 1000,
        otlpTraceId: otlp,
        sessionId: "chat-1",
        source: TraceSource.OTLP,
        costUsd: 0.02,
      }),
      call({
        accountId: "acc_run",
        at: now - 30_000,
        latencyMs: 500,
        otlpTraceId: otlp,
        source: TraceSource.OTLP,
        status: "error",
        error: "boom",
        costUsd: 0,
      }),
      // A chat session of two calls, the older and the dearer.
      call({ accountId: "acc_run", at: now - 3 * hour, latencyMs: 2000, sessionId: "chat-1", costUsd: 0.5, model: "o3" }),
      call({ accountId: "acc_run", at: now - 2 * hour, latencyMs: 1000, sessionId: "chat-1", costUsd: 0.25 }),
      // No run.
      call({ accountId: "acc_run", at: now - 1000 }),
      // Another project's run with the same session id.
      call({ accountId: "acc_run_other", at: now - 1000, sessionId: "chat-1" }),
    ];
    await store.writeBatch(calls.map((trace) => ({ trace, idempotencyKey: undefined })));
    const range = filter({ since: timestampFromMs(now - day), until: timestampFromMs(now + hour) });

    const recent = await store.listRuns("acc_run", range, "recent", 50);
    expect(recent.map((r) => r.id)).toEqual([`otlp:${otlp}`, "session:chat-1"]);
    const [agent, chat] = recent;
    expect([Number(agent!.calls), Number(agent!.errors), agent!.costUsd, Number(agent!.tokensIn), Number(agent!.tokensOut)]).toEqual([
      3, 1, 0.03, 300, 60,
    ]);
    expect(ms(agent!.start)).toBe(now - 54_000);
    expect(ms(agent!.end)).toBe(now - 30_000);
    expect([Number(chat!.calls), Number(chat!.errors), chat!.costUsd]).toEqual([2, 0, 0.75]);
    expect(ms(chat!.start)).toBe(now - 3 * hour - 2000);
    expect(ms(chat!.end)).toBe(now - 2 * hour);

    expect((await store.listRuns("acc_run", range, "cost", 50)).map((r) => r.id)).toEqual(["session:chat-1", `otlp:${otlp}`]);
    expect((await store.listRuns("acc_run", range, "recent", 1)).map((r) => r.id)).toEqual([`otlp:${otlp}`]);
    // A range that ends before the agent run started.
    expect(
      (
        await store.listRuns("acc_run", filter({ since: timestampFromMs(now - day), until: timestampFromMs(now - hour) }), "recent", 50)
      ).map((r) => r.id),
    ).toEqual(["session:chat-1"]);
    // Filtered: the runs with matching calls, summed over those calls.
    const o3 = await store.listRuns("acc_run", filter({ ...range, model: "o3" }), "recent", 50);
    expect(o3.map((r) => [r.id, Number(r.calls), r.costUsd])).toEqual([["session:chat-1", 1, 0.5]]);
  });

  it("pages the most recently ended first list after a run, ties by id, filtered or not", async () => {
    const now = Date.now();
    const runCall = (sessionId: string, minutesAgo: number, model = "gpt-4o") =>
      call({ accountId: "acc_pages", at: now - minutesAgo * 60_000, latencyMs: 1000, sessionId, model });
    const calls = [
      // A long run: its first call before every other run's, its last after them.
      runCall("long", 90),
      runCall("long", 5, "o3"),
      // Two runs that end at the same time, ordered by id.
      runCall("tie-b", 30),
      runCall("tie-a", 30, "o3"),
      ...Array.from({ length: 5 }, (_, i) => runCall(`s${i}`, 20 + i * 7, i % 2 ? "o3" : "gpt-4o")),
      call({ accountId: "acc_pages_other", at: now - 60_000, sessionId: "s0" }),
    ];
    await store.writeBatch(calls.map((trace) => ({ trace, idempotencyKey: undefined })));
    const range = filter({ since: timestampFromMs(now - day), until: timestampFromMs(now + hour) });
    for (const [view, runs] of [
      [range, 8],
      [filter({ ...range, model: "o3" }), 4],
    ] as const) {
      const whole = await store.listRuns("acc_pages", view, "recent", 50);
      expect(whole).toHaveLength(runs);
      const paged: typeof whole = [];
      let after: RunsAfter | undefined;
      for (let page = 0; page <= runs; page++) {
        const next = await store.listRuns("acc_pages", view, "recent", 3, after);
        paged.push(...next);
        if (next.length < 3) break;
        after = { endMs: ms(next.at(-1)!.end), id: next.at(-1)!.id };
      }
      expect(paged).toEqual(whole);
    }
  });

  // FerretDB answers the forty lists in about twenty seconds on a busy machine.
  it("pages exactly for a range that ends before now: runs across its end or its whole, and calls ended long after their call time", { timeout: 120_000 }, async () => {
    const now = Date.now();
    const since = now - 10 * hour;
    const until = now - 4 * hour;
    const runCall = (sessionId: string, hoursAgo: number, model = "gpt-4o", calledLatencyMs?: number) => {
      const trace = call({ accountId: "acc_span", at: now - hoursAgo * hour, latencyMs: calledLatencyMs ?? 1000, sessionId, model });
      // A call that says its call time is placed there and ends its latency later.
      return calledLatencyMs === undefined ? trace : create(StoredTraceSchema, { ...trace, calledAt: trace.receivedAt });
    };
    const calls = [
      runCall("across", 6, "o3"),
      runCall("across", 1),
      runCall("whole", 12, "o3"),
      runCall("whole", 2, "o3"),
      runCall("inside-a", 5),
      runCall("inside-b", 7),
      runCall("inside-b", 4.5, "o3"),
      runCall("inside-c", 5.5),
      runCall("long-call", 8, "o3", 3 * hour),
      runCall("after", 2),
      runCall("before", 11),
      ...Array.from({ length: 4 }, (_, i) => runCall(`mid-${i}`, 9 - i, i % 2 ? "o3" : "gpt-4o")),
    ];
    await store.writeBatch(calls.map((trace) => ({ trace, idempotencyKey: undefined })));
    const span = (t: StoredTrace) => callSpanMs(timestampMs(t.calledAt ?? t.receivedAt!), t.latencyMs, t.calledAt !== undefined);
    /** The runs as the embedded store's roll-up and trace sums define them, worked out here. */
    const expected = (model?: string) => {
      const runs = new Map<string, StoredTrace[]>();
      for (const t of calls) {
        const placed = timestampMs(t.calledAt ?? t.receivedAt!);
        if (model !== undefined && (t.model !== model || placed < since || placed >= until)) continue;
        runs.set(`session:${t.sessionId}`, [...(runs.get(`session:${t.sessionId}`) ?? []), t]);
      }
      return [...runs]
        .map(([id, own]) => ({
          id,
          calls: own.length,
          start: Math.min(...own.map((t) => span(t).start)),
          end: Math.max(...own.map((t) => span(t).end)),
        }))
        .filter((r) => r.start < until && r.end >= since)
        .sort((a, b) => b.end - a.end || (a.id < b.id ? -1 : 1));
    };
    const range = { since: timestampFromMs(since), until: timestampFromMs(until) };
    for (const model of [undefined, "o3"]) {
      const view = filter({ ...range, ...(model ? { model } : {}) });
      const want = expected(model);
      expect(want.map((r) => r.id).slice(0, 2)).toEqual(model ? ["session:inside-b", "session:long-call"] : ["session:across", "session:whole"]);
      const summary = (r: Awaited<ReturnType<typeof store.listRuns>>[number]) => ({ id: r.id, calls: Number(r.calls), start: ms(r.start), end: ms(r.end) });
      expect((await store.listRuns("acc_span", view, "recent", 50)).map(summary), model).toEqual(want);
      for (const size of [1, 2, 3]) {
        const paged: ReturnType<typeof summary>[] = [];
        let after: RunsAfter | undefined;
        for (let page = 0; page <= want.length; page++) {
          const next = await store.listRuns("acc_span", view, "recent", size, after);
          paged.push(...next.map(summary));
          if (next.length < size) break;
          after = { endMs: ms(next.at(-1)!.end), id: next.at(-1)!.id };
        }
        expect(paged, `${model} by ${size}`).toEqual(want);
      }
    }
  });

  it("starts a call that says its call time (called_at) then, and ends it its latency later", async () => {
    const now = Date.now();
    const late = (at: number, calledAt: number, latencyMs: number) =>
      create(StoredTraceSchema, {
        ...call({ accountId: "acc_timed", at, latencyMs, sessionId: "import-1" }),
        calledAt: timestampFromMs(calledAt),
      });
    // Delivered late (an hour after), or imported: placed at the call, its bar from there.
    await store.writeBatch(
      [late(now, now - 3 * hour, 2000), late(now, now - 3 * hour + 5000, 1000)].map((trace) => ({ trace, idempotencyKey: undefined })),
    );
    const range = filter({ since: timestampFromMs(now - day), until: timestampFromMs(now + hour) });
    const [run] = await store.listRuns("acc_timed", range, "recent", 50);
    expect([run!.id, ms(run!.start), ms(run!.end)]).toEqual(["session:import-1", now - 3 * hour, now - 3 * hour + 6000]);
    const detail = await store.getRun("acc_timed", "session:import-1");
    expect(detail!.calls.map((t) => t.latencyMs)).toEqual([2000, 1000]);
    expect([ms(detail!.run!.start), ms(detail!.run!.end)]).toEqual([now - 3 * hour, now - 3 * hour + 6000]);
  });

  it("spans a run from its earliest start to its latest end where its calls overlap, listed, filtered and opened", async () => {
    const now = Date.now();
    const calledAt = (trace: StoredTrace) => create(StoredTraceSchema, { ...trace, calledAt: trace.receivedAt });
    const calls = [
      // Placed first (at its call time) and ends last: 50 s long.
      calledAt(call({ accountId: "acc_overlap", at: now - 60_000, latencyMs: 50_000, sessionId: "overlap" })),
      // Received after it, yet started before it: 35 s long, ended on receipt.
      call({ accountId: "acc_overlap", at: now - 40_000, latencyMs: 35_000, sessionId: "overlap" }),
      // The last placed call: neither its start nor its end bounds the run.
      call({ accountId: "acc_overlap", at: now - 30_000, latencyMs: 1000, sessionId: "overlap" }),
      // A run that ends between the last placed call's end and the run's end.
      call({ accountId: "acc_overlap", at: now - 20_000, latencyMs: 1000, sessionId: "other" }),
    ];
    await store.writeBatch(calls.map((trace) => ({ trace, idempotencyKey: undefined })));
    const range = filter({ since: timestampFromMs(now - day), until: timestampFromMs(now + hour) });
    const span = (r: { id: string; start?: Timestamp; end?: Timestamp }) => [r.id, ms(r.start), ms(r.end)];
    const overlap = ["session:overlap", now - 75_000, now - 10_000];
    for (const view of [range, filter({ ...range, model: "gpt-4o" })]) {
      const listed = await store.listRuns("acc_overlap", view, "recent", 50);
      expect(listed.map(span)).toEqual([overlap, ["session:other", now - 21_000, now - 20_000]]);
      expect((await store.listRuns("acc_overlap", view, "recent", 1)).map(span)).toEqual([overlap]);
    }
    const opened = await store.getRun("acc_overlap", "session:overlap");
    expect(span(opened!.run!)).toEqual(overlap);
    expect(opened!.calls.map((t) => t.latencyMs)).toEqual([35_000, 50_000, 1000]);
  });

  it("ranks runs by cost as listed: the whole run's unfiltered (a run straddling the range's start too), the matching calls' filtered", async () => {
    const now = Date.now();
    const since = now - 6 * hour;
    const at = (sessionId: string, placed: number, costUsd: number, latencyMs = 1000) =>
      call({ accountId: "acc_cost", at: placed, latencyMs, sessionId, costUsd });
    const calls = [
      // Dear before the range, cheap inside it.
      at("straddle", since - 2 * hour, 5),
      at("straddle", since + hour, 0.01),
      // Wholly inside the range.
      at("inside", since + 2 * hour, 1),
      // One call, placed (at its call time) before the range and running into it.
      create(StoredTraceSchema, { ...at("long", since - hour, 3, 2 * hour), calledAt: timestampFromMs(since - hour) }),
      // Before the range, and over before it.
      at("before", since - 3 * hour, 9),
    ];
    await store.writeBatch(calls.map((trace) => ({ trace, idempotencyKey: undefined })));
    const range = filter({ since: timestampFromMs(since), until: timestampFromMs(now + hour) });
    const ranked = (runs: Awaited<ReturnType<typeof store.listRuns>>) => runs.map((r) => [r.id, Number(r.costUsd.toFixed(6))]);
    const whole = [
      ["session:straddle", 5.01],
      ["session:long", 3],
      ["session:inside", 1],
    ];
    expect(ranked(await store.listRuns("acc_cost", range, "cost", 50))).toEqual(whole);
    for (const limit of [1, 2]) expect(ranked(await store.listRuns("acc_cost", range, "cost", limit))).toEqual(whole.slice(0, limit));
    // The recent list shows the same runs with the same figures.
    expect(ranked(await store.listRuns("acc_cost", range, "recent", 50)).sort()).toEqual([...whole].sort());
    const filtered = filter({ ...range, model: "gpt-4o" });
    const matching = [
      ["session:inside", 1],
      ["session:straddle", 0.01],
    ];
    expect(ranked(await store.listRuns("acc_cost", filtered, "cost", 50))).toEqual(matching);
    expect(ranked(await store.listRuns("acc_cost", filtered, "cost", 1))).toEqual(matching.slice(0, 1));
  });

  it("opens one run with its calls by start, and no other project's", async () => {
    const otlp = "a".repeat(32);
    const run = await store.getRun("acc_run", `otlp:${otlp}`);
    expect(run).toBeDefined();
    expect(Number(run!.run!.calls)).toBe(3);
    expect(run!.truncated).toBe(false);
    const starts = run!.calls.map((t) => timestampMs(t.receivedAt!) - t.latencyMs);
    expect(starts).toEqual([...starts].sort((a, b) => a - b));
    expect(run!.calls.map((t) => t.status)).toEqual(["success", "success", "error"]);
    const chat = await store.getRun("acc_run", "session:chat-1");
    expect(chat!.calls.map((t) => t.model)).toEqual(["o3", "gpt-4o"]);
    expect(Number(chat!.run!.calls)).toBe(2);
    expect(await store.getRun("acc_nobody", "session:chat-1")).toBeUndefined();
    expect(await store.getRun("acc_run", "session:never")).toBeUndefined();
    expect(await store.getRun("acc_run", "nonsense")).toBeUndefined();
  });
});

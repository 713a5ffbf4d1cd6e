import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AlertEventSchema, AlertKind, AlertRuleSchema, AlertScopeKind, AlertWindowKind } from "../../gen/calltrace/v1/alert_pb.js";
import type { AttemptResult, NewDestination } from "../../src/store/alert-store.js";
import type { Store } from "../../src/store/store.js";
import { storeAdapters } from "../support/store-adapters.js";

/** The alerts part of the store contract: rules, state, the outbox, claims, leases and destinations, on every adapter. */
const adapters = storeAdapters();
let seq = 0;
const unique = (prefix: string) => `${prefix}_${Date.now().toString(36)}${(seq++).toString(36)}`;

const rule = (projectId: string, destinationIds: string[] = [], muted = false) =>
  create(AlertRuleSchema, {
    id: unique("alr"),
    projectId,
    name: "daily spend",
    kind: AlertKind.SPEND,
    scope: { kind: AlertScopeKind.TAG, value: "chat" },
    thresholdsPercent: [50, 80, 100],
    budgetUsd: 5,
    window: { kind: AlertWindowKind.DAY },
    destinationIds,
    muted,
    createdAt: timestampFromMs(Date.now() + seq),
  });

const event = (projectId: string, ruleId: string, id = unique("evt")) =>
  create(AlertEventSchema, {
    id,
    projectId,
    ruleId,
    kind: AlertKind.SPEND,
    thresholdPercent: 80,
    thresholdValue: 4,
    measuredValue: 4.2,
    firedAt: timestampFromMs(Date.now()),
  });

const destination = (projectId: string, kind: NewDestination["kind"] = "webhook"): NewDestination => ({
  id: unique("dst"),
  projectId,
  kind,
  name: "ops",
  url: "https://hooks.example.com/in",
  emails: [],
  secrets: [{ sealed: "iv.tag.data", createdAt: new Date(1_700_000_000_000), expiresAt: undefined }],
  createdAt: new Date(),
});

const ok = (at = new Date()): AttemptResult => ({
  attempt: { at, outcome: "ok", responseCode: 204, durationMs: 3, detail: "", trigger: "schedule" },
  state: "delivered",
});
const failed = (at: Date, next: Date): AttemptResult => ({
  attempt: { at, outcome: "http_error", responseCode: 503, durationMs: 3, detail: "unavailable", trigger: "schedule" },
  state: "pending",
  nextAttemptAt: next,
});

describe.each(adapters)("alert store contract: %s", (_name, open) => {
  let store: Store;
  let reopen: () => Promise<Store>;
  let others: Store[] = [];
  let projectId: string;
  beforeEach(async () => {
    ({ store, reopen } = await open());
    others = [];
    projectId = (await store.teams.defaultProject("free")).id;
  });
  afterEach(async () => {
    for (const s of others) await s.close();
    await store.close();
  });

  it("creates, reads, updates and deletes rules, each in its own project", async () => {
    const other = (await store.teams.createOrganization({ name: "other", project: { name: "p", plan: "free" } })).project.id;
    const a = rule(projectId);
    const b = rule(projectId);
    await store.alerts.createRule(a);
    await store.alerts.createRule(b);
    await store.alerts.createRule(rule(other));
    expect(await store.alerts.getRule(projectId, a.id)).toEqual(a);
    expect((await store.alerts.listRules(projectId)).map((r) => r.id)).toEqual([a.id, b.id]);
    expect((await store.alerts.listAllRules()).length).toBe(3);
    // Another project's id answers as an unknown one.
    expect(await store.alerts.getRule(other, a.id)).toBeUndefined();
    expect(await store.alerts.updateRule({ ...a, projectId: other, name: "stolen" })).toBe(false);
    expect(await store.alerts.deleteRule(other, a.id)).toBe(false);

    expect(await store.alerts.updateRule({ ...a, name: "renamed", thresholdsPercent: [100] })).toBe(true);
    expect(await store.alerts.getRule(projectId, a.id)).toMatchObject({ name: "renamed", thresholdsPercent: [100], budgetUsd: 5 });
    expect(await store.alerts.updateRule(rule(projectId))).toBe(false);

    await store.alerts.writeRuleState(a.id, '{"fired":[50]}');
    await store.alerts.writeRuleState(a.id, '{"fired":[50,80]}');
    expect(await store.alerts.readRuleState(a.id)).toBe('{"fired":[50,80]}');
    expect(await store.alerts.readRuleState(b.id)).toBeUndefined();
    await store.alerts.writeRuleState("alr_missing", "{}");
    expect(await store.alerts.readRuleState("alr_missing")).toBeUndefined();

    expect(await store.alerts.deleteRule(projectId, a.id)).toBe(true);
    expect(await store.alerts.deleteRule(projectId, a.id)).toBe(false);
    expect(await store.alerts.getRule(projectId, a.id)).toBeUndefined();
    expect(await store.alerts.readRuleState(a.id)).toBeUndefined();
  });

  it("enqueues an event once, with one pending delivery per live destination of its rule, durably", async () => {
    const [d1, d2, disabled] = [destination(projectId), destination(projectId, "slack"), destination(projectId)];
    for (const d of [d1, d2, disabled]) await store.alerts.createDestination(d);
    // Disabled by failing: recorded through a claim, as the worker does.
    await store.alerts.createRule(rule(projectId, [disabled.id]));
    const [primer] = await store.alerts.listRules(projectId);
    await store.alerts.enqueueEvent(event(projectId, primer!.id));
    const [claim] = await store.alerts.claimDueDeliveries("w", new Date(), 60_000, 10);
    await store.alerts.recordAttempt(claim!.delivery.id, "w", { ...failed(new Date(), new Date()), disableDestination: { at: new Date(), reason: "failing for 3 days" } });
    expect(await store.alerts.getDestination(projectId, disabled.id)).toMatchObject({ disabledReason: "failing for 3 days", failingSince: expect.any(Date) });

    const r = rule(projectId, [d1.id, d2.id, disabled.id, "dst_unknown", d1.id]);
    await store.alerts.createRule(r);
    const e = event(projectId, r.id);
    expect(await store.alerts.enqueueEvent(e)).toBe(true);
    expect(await store.alerts.enqueueEvent({ ...e, measuredValue: 99 })).toBe(false);
    const deliveries = await store.alerts.listDeliveries(projectId, { eventId: e.id, limit: 10 });
    expect(deliveries.map((d) => d.destinationId).sort()).toEqual([d1.id, d2.id].sort());
    expect(deliveries.every((d) => d.state === "pending" && d.attempts.length === 0 && d.id.startsWith(e.id))).toBe(true);

    // Committed: another connection (a restarted process) sees the event and its deliveries.
    const again = await reopen();
    others.push(again);
    expect(await again.alerts.getEvent(projectId, e.id)).toEqual(e);
    expect((await again.alerts.listDeliveries(projectId, { eventId: e.id, limit: 10 })).length).toBe(2);

    // A muted rule's event is recorded, and notifies nobody.
    const muted = rule(projectId, [d1.id], true);
    await store.alerts.createRule(muted);
    const quiet = event(projectId, muted.id);
    expect(await store.alerts.enqueueEvent(quiet)).toBe(true);
    expect(await store.alerts.listDeliveries(projectId, { eventId: quiet.id, limit: 10 })).toEqual([]);
    // A test event goes to the destinations it names.
    const test = event(projectId, "");
    expect(await store.alerts.enqueueEvent(test, [d2.id])).toBe(true);
    expect((await store.alerts.listDeliveries(projectId, { eventId: test.id, limit: 10 })).map((d) => d.destinationId)).toEqual([d2.id]);
  });

  it("lists the firing history newest first, by rule and in pages", async () => {
    const [a, b] = [rule(projectId), rule(projectId)];
    await store.alerts.createRule(a);
    await store.alerts.createRule(b);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const e = event(projectId, i % 2 === 0 ? a.id : b.id);
      ids.push(e.id);
      await store.alerts.enqueueEvent(e);
    }
    const newest = [...ids].reverse();
    expect((await store.alerts.listEvents(projectId, { limit: 10 })).map((e) => e.id)).toEqual(newest);
    expect((await store.alerts.listEvents(projectId, { ruleId: a.id, limit: 10 })).map((e) => e.id)).toEqual([ids[4], ids[2], ids[0]]);
    const first = await store.alerts.listEvents(projectId, { limit: 2 });
    expect(first.map((e) => e.id)).toEqual(newest.slice(0, 2));
    expect((await store.alerts.listEvents(projectId, { limit: 10, before: first[1]!.id })).map((e) => e.id)).toEqual(newest.slice(2));
    const other = (await store.teams.createOrganization({ name: "o", project: { name: "p", plan: "free" } })).project.id;
    expect(await store.alerts.listEvents(other, { limit: 10 })).toEqual([]);
    expect(await store.alerts.getEvent(other, ids[0]!)).toBeUndefined();
  });

  it("gives a lease to one holder at a time, renews it for that holder, and hands it over once expired", async () => {
    const second = await reopen();
    others.push(second);
    const name = unique("lease");
    const raced = await Promise.all([store.alerts.tryLease(name, "a", 300), second.alerts.tryLease(name, "b", 300)]);
    expect(raced.filter(Boolean)).toHaveLength(1);
    const [holder, other] = raced[0] ? ["a", "b"] : ["b", "a"];
    expect(await store.alerts.tryLease(name, holder!, 300)).toBe(true);
    expect(await second.alerts.tryLease(name, other!, 300)).toBe(false);
    await new Promise((r) => setTimeout(r, 350));
    expect(await second.alerts.tryLease(name, other!, 300)).toBe(true);
    expect(await store.alerts.tryLease(name, holder!, 300)).toBe(false);
  });

  it("claims each due delivery for one worker, records attempts under the claim, and retries, resends and skips disabled destinations", async () => {
    const d = destination(projectId);
    await store.alerts.createDestination(d);
    const r = rule(projectId, [d.id]);
    await store.alerts.createRule(r);
    const events = [event(projectId, r.id), event(projectId, r.id), event(projectId, r.id)];
    for (const e of events) await store.alerts.enqueueEvent(e);

    const second = await reopen();
    others.push(second);
    const now = new Date();
    const [mine, theirs] = await Promise.all([
      store.alerts.claimDueDeliveries("w1", now, 60_000, 10),
      second.alerts.claimDueDeliveries("w2", now, 60_000, 10),
    ]);
    const all = [...mine, ...theirs].map((c) => c.delivery.id);
    expect(all.sort()).toEqual(events.map((e) => `${e.id}.${d.id}`).sort());
    const claimed = [...mine, ...theirs].find((c) => c.event.id === events[0]!.id)!;
    expect(claimed.event).toEqual(events[0]);
    expect(claimed.destination).toMatchObject({ id: d.id, url: d.url, secrets: d.secrets });
    const owner = mine.includes(claimed) ? "w1" : "w2";
    const intruder = owner === "w1" ? "w2" : "w1";
    // Nothing more is due while the claims live.
    expect(await store.alerts.claimDueDeliveries("w3", now, 60_000, 10)).toEqual([]);

    const id = claimed.delivery.id;
    expect(await store.alerts.recordAttempt(id, intruder, ok())).toBe(false);
    const retryAt = new Date(now.getTime() + 5000);
    expect(await store.alerts.recordAttempt(id, owner, failed(now, retryAt))).toBe(true);
    expect(await store.alerts.getDestination(projectId, d.id)).toMatchObject({ failingSince: now });
    expect(await store.alerts.claimDueDeliveries("w3", now, 60_000, 10)).toEqual([]);
    const [retry] = await store.alerts.claimDueDeliveries("w3", retryAt, 60_000, 10);
    expect(retry!.delivery).toMatchObject({ id, state: "pending", scheduledAttempts: 1, attempts: [expect.objectContaining({ responseCode: 503, outcome: "http_error" })] });
    expect(await store.alerts.recordAttempt(id, "w3", ok(retryAt))).toBe(true);
    const [done] = await store.alerts.listDeliveries(projectId, { eventId: events[0]!.id, limit: 1 });
    expect(done).toMatchObject({ state: "delivered", scheduledAttempts: 2 });
    expect(done!.attempts.map((a) => a.responseCode)).toEqual([503, 204]);
    expect((await store.alerts.getDestination(projectId, d.id))!.failingSince).toBeUndefined();

    // A claim that expires unused is taken over.
    const later = new Date(now.getTime() + 61_000);
    const takenOver = await store.alerts.claimDueDeliveries("w4", later, 60_000, 10);
    expect(takenOver.map((c) => c.delivery.id).sort()).toEqual(events.slice(1).map((e) => `${e.id}.${d.id}`).sort());
    expect(await store.alerts.recordAttempt(takenOver[0]!.delivery.id, owner, ok())).toBe(false);

    // Resend: due again, with the same id and its log.
    const other = (await store.teams.createOrganization({ name: "o", project: { name: "p", plan: "free" } })).project.id;
    expect(await store.alerts.resendDelivery(other, id)).toBeUndefined();
    expect(await store.alerts.resendDelivery(projectId, id)).toMatchObject({ id, state: "pending", resent: true, attempts: [expect.anything(), expect.anything()] });
    const [resent] = await store.alerts.claimDueDeliveries("w5", new Date(Date.now() + 1000), 60_000, 10);
    expect(resent!.delivery).toMatchObject({ id, resent: true });

    // A disabled destination's deliveries wait; enabling it lets them go.
    await store.alerts.recordAttempt(id, "w5", { ...failed(new Date(), new Date()), disableDestination: { at: new Date(), reason: "r" } });
    expect(await store.alerts.claimDueDeliveries("w6", new Date(Date.now() + 200_000), 60_000, 10)).toEqual([]);
    expect(await store.alerts.enableDestination(projectId, d.id)).toMatchObject({ disabledAt: undefined, failingSince: undefined, disabledReason: "" });
    expect((await store.alerts.claimDueDeliveries("w6", new Date(Date.now() + 200_000), 60_000, 10)).length).toBe(3);
  });

  it("a disabled destination's waiting deliveries do not hold up the others", async () => {
    const [dead, live] = [destination(projectId), destination(projectId)];
    for (const d of [dead, live]) await store.alerts.createDestination(d);
    const toDead = rule(projectId, [dead.id]);
    await store.alerts.createRule(toDead);
    for (let i = 0; i < 70; i++) await store.alerts.enqueueEvent(event(projectId, toDead.id));
    const [first] = await store.alerts.claimDueDeliveries("w", new Date(Date.now() + 1000), 60_000, 1);
    await store.alerts.recordAttempt(first!.delivery.id, "w", { ...failed(new Date(), new Date()), disableDestination: { at: new Date(), reason: "r" } });
    const toLive = rule(projectId, [live.id]);
    await store.alerts.createRule(toLive);
    const e = event(projectId, toLive.id);
    await store.alerts.enqueueEvent(e);
    const claimed = await store.alerts.claimDueDeliveries("w", new Date(Date.now() + 1000), 60_000, 16);
    expect(claimed.map((c) => c.delivery.id)).toEqual([`${e.id}.${live.id}`]);
  });

  it("keeps destinations per project, replaces secrets, and deletes one with its pending deliveries", async () => {
    const d = destination(projectId);
    const created = await store.alerts.createDestination(d);
    expect(created).toEqual({ ...d, failingSince: undefined, disabledAt: undefined, disabledReason: "" });
    const mail = await store.alerts.createDestination({ ...destination(projectId, "email"), url: "", secrets: [], emails: ["a@example.com"] });
    expect((await store.alerts.listDestinations(projectId)).map((x) => x.id)).toEqual([d.id, mail.id]);
    const other = (await store.teams.createOrganization({ name: "o", project: { name: "p", plan: "free" } })).project.id;
    expect(await store.alerts.getDestination(other, d.id)).toBeUndefined();
    expect(await store.alerts.setDestinationSecrets(other, d.id, [])).toBeUndefined();
    expect(await store.alerts.deleteDestination(other, d.id)).toBe(false);

    const rotated = [
      { sealed: "new", createdAt: new Date(1_800_000_000_000), expiresAt: undefined },
      { sealed: "old", createdAt: new Date(1_700_000_000_000), expiresAt: new Date(1_800_086_400_000) },
    ];
    expect((await store.alerts.setDestinationSecrets(projectId, d.id, rotated))!.secrets).toEqual(rotated);

    const r = rule(projectId, [d.id]);
    await store.alerts.createRule(r);
    await store.alerts.enqueueEvent(event(projectId, r.id));
    expect(await store.alerts.deleteDestination(projectId, d.id)).toBe(true);
    expect(await store.alerts.listDeliveries(projectId, { limit: 10 })).toEqual([]);
    expect(await store.alerts.getDestination(projectId, d.id)).toBeUndefined();
  });

  it("keeps one default secret key, and deleting a project deletes its rules, destinations, events and deliveries", async () => {
    const key = await store.alerts.defaultSecretKey();
    expect(key.length).toBe(32);
    const again = await reopen();
    others.push(again);
    expect((await again.alerts.defaultSecretKey()).equals(key)).toBe(true);

    const doomed = (await store.teams.createOrganization({ name: "doomed", project: { name: "p", plan: "free" } })).project.id;
    const d = destination(doomed);
    await store.alerts.createDestination(d);
    const r = rule(doomed, [d.id]);
    await store.alerts.createRule(r);
    await store.alerts.writeRuleState(r.id, "{}");
    const e = event(doomed, r.id);
    await store.alerts.enqueueEvent(e);
    const kept = rule(projectId);
    await store.alerts.createRule(kept);

    expect(await store.teams.deleteProject(doomed)).toBe(true);
    expect(await store.alerts.listRules(doomed)).toEqual([]);
    expect(await store.alerts.readRuleState(r.id)).toBeUndefined();
    expect(await store.alerts.listDestinations(doomed)).toEqual([]);
    expect(await store.alerts.listEvents(doomed, { limit: 10 })).toEqual([]);
    expect(await store.alerts.listDeliveries(doomed, { limit: 10 })).toEqual([]);
    expect(await store.alerts.claimDueDeliveries("w", new Date(Date.now() + 1000), 1000, 10)).toEqual([]);
    expect((await store.alerts.listAllRules()).map((x) => x.id)).toEqual([kept.id]);
  });
});

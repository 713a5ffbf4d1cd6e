import { readFileSync } from "node:fs";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Ajv2020 } from "ajv/dist/2020.js";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { AlertEventSchema, AlertKind, AlertRuleSchema, AlertScopeKind, AlertWindowKind } from "../../gen/calltrace/v1/alert_pb.js";
import { destinations } from "../../src/alerts/destinations.js";
import { secretBox } from "../../src/alerts/secret-box.js";
import { newId } from "../../src/store/ids.js";
import { freePort } from "../support/free-port.js";
import { startTestService, type TestService } from "../support/test-service.js";
import { startWebhookReceiver, waitFor } from "../support/webhook-receiver.js";

/**
 * Webhook deliveries of the running service, verified by a receiver that uses the
 * `standardwebhooks` package. Events are put in the outbox as the evaluator does; the service's
 * delivery worker sends them, with a retry schedule shortened to 20 ms units.
 */
const schema = JSON.parse(readFileSync(new URL("../../docs/alert-event.schema.json", import.meta.url), "utf8"));
const ajv = new Ajv2020({ strict: true, allErrors: true });
ajv.addFormat("date-time", (s: string) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/.test(s) && !Number.isNaN(Date.parse(s)));
ajv.addFormat("uri", (s: string) => URL.canParse(s));
const validateBody = ajv.compile(schema);

let service: TestService;
let projectId: string;
let dests: ReturnType<typeof destinations>;

beforeAll(async () => {
  service = await startTestService({ alertRetryBaseMs: 20, publicUrl: "https://calltrace.example.com" });
  projectId = (await service.createKey()).accountId;
  dests = destinations(service.store.alerts, secretBox(await service.store.alerts.defaultSecretKey()), { privateUrls: true });
});
const receivers: Array<{ close(): Promise<void> }> = [];
afterAll(async () => {
  for (const r of receivers) await r.close();
});

/** A spend rule sending to `destinationIds`, and an 80 % event of it put in the outbox. */
async function fire(destinationIds: string[]) {
  const rule = create(AlertRuleSchema, {
    id: newId("alr"),
    projectId,
    name: "chat budget",
    kind: AlertKind.SPEND,
    scope: { kind: AlertScopeKind.TAG, value: "chat" },
    thresholdsPercent: [50, 80, 100],
    budgetUsd: 5,
    window: { kind: AlertWindowKind.DAY },
    destinationIds,
  });
  await service.store.alerts.createRule(rule);
  const event = create(AlertEventSchema, {
    id: newId("evt"),
    projectId,
    ruleId: rule.id,
    ruleName: rule.name,
    kind: AlertKind.SPEND,
    scope: rule.scope,
    windowStart: timestampFromMs(Date.UTC(2026, 10, 26)),
    windowEnd: timestampFromMs(Date.UTC(2026, 10, 27)),
    thresholdPercent: 80,
    thresholdValue: 4,
    measuredValue: 4.25,
    firedAt: timestampFromMs(Date.now()),
  });
  expect(await service.store.alerts.enqueueEvent(event)).toBe(true);
  return event;
}

const deliveriesOf = (eventId: string) => service.store.alerts.listDeliveries(projectId, { eventId, limit: 10 });

describe("webhook delivery over the outbox", () => {
  it("delivers a signed body that verifies with standardwebhooks and validates against docs/alert-event.schema.json", async () => {
    const { destination, secret } = await dests.create(projectId, { kind: "webhook", name: "ops", url: "http://127.0.0.1:9/unused" });
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    // Stored sealed: the plaintext secret is nowhere in the destination.
    expect(JSON.stringify(destination)).not.toContain(secret.slice(6));
    const receiver = await startWebhookReceiver({ secret });
    receivers.push(receiver);
    await service.store.alerts.deleteDestination(projectId, destination.id);
    const live = await dests.create(projectId, { kind: "webhook", name: "ops", url: receiver.url });
    const verifiedBy = new Webhook(live.secret);

    const event = await fire([live.destination.id]);
    await waitFor(() => receiver.received.length > 0, "the delivery");
    const [delivery] = receiver.received;
    // The receiver with the first secret refused it: each destination has a secret of its own.
    expect(receiver.accepted).toHaveLength(0);
    const headers = delivery!.headers as Record<string, string>;
    expect(headers["webhook-id"]).toBe(event.id);
    expect(Math.abs(Number(headers["webhook-timestamp"]) - Date.now() / 1000)).toBeLessThan(30);
    expect(headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    const payload = verifiedBy.verify(delivery!.body, headers) as { type: string; data: Record<string, unknown> };
    expect(validateBody(payload), JSON.stringify(validateBody.errors)).toBe(true);
    expect(payload).toMatchObject({
      type: "alert.fired",
      data: {
        id: event.id,
        project_id: projectId,
        rule_name: "chat budget",
        kind: "ALERT_KIND_SPEND",
        scope: { kind: "ALERT_SCOPE_KIND_TAG", value: "chat", metadata_key: "" },
        threshold_percent: 80,
        threshold_value: 4,
        measured_value: 4.25,
        window_start: "2026-11-26T00:00:00Z",
        window_end: "2026-11-27T00:00:00Z",
      },
    });
    expect(payload.data.dashboard_url).toBe(
      `https://calltrace.example.com/app/p/${projectId}/traces?range=custom&from=2026-11-26T00%3A00&to=2026-11-27T00%3A00&tag=chat`,
    );

    // A stale timestamp is refused (standardwebhooks allows 5 minutes), so a captured delivery cannot be replayed later.
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(Date.now() + 6 * 60_000);
      expect(() => verifiedBy.verify(delivery!.body, headers)).toThrow(/too old/i);
    } finally {
      vi.useRealTimers();
    }
    // A wrong secret, or a body changed on the way, is refused.
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 7).toString("base64")}`).verify(delivery!.body, headers)).toThrow();
    expect(() => verifiedBy.verify(delivery!.body.replace("4.25", "0.25"), headers)).toThrow();

    // The 401 was final (a 4xx other than 429): one attempt, logged with its code.
    await waitFor(async () => (await deliveriesOf(event.id))[0]?.state === "failed", "the delivery to fail for good");
    const [logged] = await deliveriesOf(event.id);
    expect(logged!.attempts).toEqual([
      expect.objectContaining({ outcome: "http_error", responseCode: 401, trigger: "schedule", detail: "bad signature" }),
    ]);
  });

  it("retries 429 and 5xx with the same webhook-id until delivered, and gives up at once on another 4xx", async () => {
    const codes = [429, 503, 204];
    const { destination, secret } = await dests.create(projectId, { kind: "webhook", name: "flaky", url: "http://127.0.0.1:9/x" });
    await service.store.alerts.deleteDestination(projectId, destination.id);
    const receiver = await startWebhookReceiver({ status: (n) => codes[n] ?? 204 });
    receivers.push(receiver);
    const flaky = await dests.create(projectId, { kind: "webhook", name: "flaky", url: receiver.url });
    const event = await fire([flaky.destination.id]);
    await waitFor(async () => (await deliveriesOf(event.id))[0]?.state === "delivered", "the third attempt to succeed");
    expect(receiver.received.map((d) => d.headers["webhook-id"])).toEqual([event.id, event.id, event.id]);
    // Each attempt is signed afresh, with its own timestamp, by the destination's secret.
    for (const d of receiver.received) new Webhook(flaky.secret).verify(d.body, d.headers as Record<string, string>);
    expect(secret).not.toBe(flaky.secret);
    const [logged] = await deliveriesOf(event.id);
    expect(logged!.attempts.map((a) => a.responseCode)).toEqual([429, 503, 204]);
    expect(logged!.attempts.map((a) => a.outcome)).toEqual(["http_error", "http_error", "ok"]);

    const gone = await startWebhookReceiver({ status: () => 410 });
    receivers.push(gone);
    const final = await dests.create(projectId, { kind: "webhook", name: "gone", url: gone.url });
    const refused = await fire([final.destination.id]);
    await waitFor(async () => (await deliveriesOf(refused.id))[0]?.state === "failed", "the 410 to be final");
    await new Promise((r) => setTimeout(r, 300));
    expect(gone.received).toHaveLength(1);
  });

  it("delivers once per id to a receiver that was down and comes back", async () => {
    const port = await freePort();
    const { destination, secret } = await dests.create(projectId, {
      kind: "webhook",
      name: "later",
      url: `http://127.0.0.1:${port}/hooks`,
    });
    const events = [await fire([destination.id]), await fire([destination.id])];
    // Nothing listens: the first attempts fail with a network error and are scheduled again.
    await waitFor(async () => (await deliveriesOf(events[1]!.id))[0]!.attempts.length >= 2, "two failed attempts");
    const [failing] = await deliveriesOf(events[0]!.id);
    expect(failing!.attempts[0]).toMatchObject({ outcome: "network_error", responseCode: 0 });
    expect((await service.store.alerts.getDestination(projectId, destination.id))!.failingSince).toBeInstanceOf(Date);

    const receiver = await startWebhookReceiver({ secret, port });
    receivers.push(receiver);
    await waitFor(
      async () => (await Promise.all(events.map((e) => deliveriesOf(e.id)))).every(([d]) => d!.state === "delivered"),
      "both deliveries",
    );
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.accepted.map((d) => d.headers["webhook-id"]).sort()).toEqual(events.map((e) => e.id).sort());
    expect((await service.store.alerts.getDestination(projectId, destination.id))!.failingSince).toBeUndefined();
  });

  it("signs with both secrets during a rotation, so receivers holding either verify", async () => {
    const receiver = await startWebhookReceiver();
    receivers.push(receiver);
    const { destination, secret: old } = await dests.create(projectId, { kind: "webhook", name: "rotating", url: receiver.url });
    const rotated = await dests.rotate(projectId, destination.id, 60_000);
    expect(rotated!.secret).not.toBe(old);
    expect(rotated!.destination.secrets.map((s) => s.expiresAt === undefined)).toEqual([true, false]);
    const event = await fire([destination.id]);
    await waitFor(() => receiver.accepted.length === 1, "the delivery");
    const [d] = receiver.accepted;
    expect(String(d!.headers["webhook-signature"]).split(" ")).toHaveLength(2);
    for (const secret of [old, rotated!.secret]) {
      expect(new Webhook(secret).verify(d!.body, d!.headers as Record<string, string>)).toMatchObject({ data: { id: event.id } });
    }
    // Once the overlap is over, only the new secret signs.
    const again = await dests.rotate(projectId, destination.id, 0);
    const later = await fire([destination.id]);
    await waitFor(() => receiver.accepted.length === 2, "the second delivery");
    const last = receiver.accepted[1]!;
    expect(String(last.headers["webhook-signature"]).split(" ")).toHaveLength(1);
    expect(new Webhook(again!.secret).verify(last.body, last.headers as Record<string, string>)).toMatchObject({ data: { id: later.id } });
    expect(() => new Webhook(rotated!.secret).verify(last.body, last.headers as Record<string, string>)).toThrow();
  });

  it("posts a Slack incoming-webhook payload: text, blocks and a link into the dashboard", async () => {
    const slack = await startWebhookReceiver({ status: () => 200 });
    receivers.push(slack);
    const { destination } = await dests.create(projectId, { kind: "slack", name: "", url: `${slack.url}/T000/B000/secretpart` });
    // The URL is its credential: shown without its path, kept sealed.
    expect(destination.url).toBe(new URL(slack.url).origin + "/…");
    expect(JSON.stringify(destination)).not.toContain("secretpart");
    const event = await fire([destination.id]);
    await waitFor(() => slack.accepted.length === 1, "the Slack message");
    const [message] = slack.accepted;
    expect(message!.headers["content-type"]).toBe("application/json");
    expect(message!.headers["webhook-signature"]).toBeUndefined();
    const body = JSON.parse(message!.body);
    expect(body.text).toBe("chat budget: Spend of tag chat reached 80 % of $4.0000: $4.2500");
    expect(body.blocks).toEqual([
      { type: "section", text: { type: "mrkdwn", text: `*${body.text}*` } },
      { type: "context", elements: [{ type: "mrkdwn", text: `project ${projectId} · window 2026-11-26 00:00 – 2026-11-27 00:00 UTC` }] },
      {
        type: "actions",
        elements: [
          {
            type: "button",
            text: { type: "plain_text", text: "Open in calltrace" },
            url: `https://calltrace.example.com/app/p/${projectId}/traces?range=custom&from=2026-11-26T00%3A00&to=2026-11-27T00%3A00&tag=chat`,
          },
        ],
      },
    ]);
    // The receiver has the message before the sender has recorded its answer.
    await waitFor(async () => (await deliveriesOf(event.id))[0]?.state === "delivered", "the delivery to be recorded");
    expect((await deliveriesOf(event.id))[0]).toMatchObject({ state: "delivered" });
  });
});

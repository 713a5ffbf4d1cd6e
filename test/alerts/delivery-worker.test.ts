import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AlertEventSchema, AlertKind, AlertRuleSchema, AlertScopeKind } from "../../gen/calltrace/v1/alert_pb.js";
import { startDeliveryWorker } from "../../src/alerts/delivery-worker.js";
import { destinations } from "../../src/alerts/destinations.js";
import { secretBox } from "../../src/alerts/secret-box.js";
import { newId } from "../../src/store/ids.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { smtpTransport } from "../../src/teams/smtp-transport.js";
import { startMailpit, type Mailpit } from "../support/mailpit.js";
import { tempDir } from "../support/temp-dir.js";
import { startWebhookReceiver } from "../support/webhook-receiver.js";

/** The delivery worker on its own, with a clock the test moves: disabling after 3 days, and mail. */
const day = 86_400_000;
let store: Store;
let projectId: string;
let mailpit: Mailpit;
const box = secretBox(Buffer.alloc(32, 3));

beforeAll(async () => {
  store = openSqliteStore(tempDir());
  projectId = (await store.teams.defaultProject("free")).id;
  mailpit = await startMailpit();
});
afterAll(async () => {
  await store.close();
  mailpit?.close();
});

async function fire(destinationIds: string[], firedAt = Date.now()) {
  const rule = create(AlertRuleSchema, {
    id: newId("alr"),
    projectId,
    name: "errors",
    kind: AlertKind.ERRORS,
    scope: { kind: AlertScopeKind.MODEL, value: "gpt-4o" },
    windowMinutes: 10,
    errorRatePercent: 5,
    minCalls: 20,
    destinationIds,
  });
  await store.alerts.createRule(rule);
  const event = create(AlertEventSchema, {
    id: newId("evt"),
    projectId,
    ruleId: rule.id,
    ruleName: rule.name,
    kind: AlertKind.ERRORS,
    scope: rule.scope,
    windowStart: timestampFromMs(firedAt - 600_000),
    windowEnd: timestampFromMs(firedAt),
    thresholdPercent: 100,
    thresholdValue: 5,
    measuredValue: 12.5,
    firedAt: timestampFromMs(firedAt),
  });
  await store.alerts.enqueueEvent(event);
  return event;
}

describe("delivery worker", () => {
  it("disables a destination whose every attempt has failed for 3 days, and says why", async () => {
    const receiver = await startWebhookReceiver({ status: () => 500 });
    const { destination } = await destinations(store.alerts, box, { privateUrls: true }).create(projectId, {
      kind: "webhook",
      name: "down",
      url: receiver.url,
    });
    // A moment ahead of the events' enqueue time, so each is due at once.
    let now = Date.now() + 1000;
    const worker = startDeliveryWorker({
      store: store.alerts,
      box,
      privateUrls: true,
      retryBaseMs: 1,
      publicUrl: "http://localhost",
      pollMs: 0,
      now: () => new Date(now),
    });
    try {
      await fire([destination.id]);
      await worker.runOnce();
      const failing = await store.alerts.getDestination(projectId, destination.id);
      expect(failing).toMatchObject({ failingSince: new Date(now), disabledAt: undefined });

      // Two days on, still failing: not yet disabled.
      now += 2 * day;
      await fire([destination.id]);
      await worker.runOnce();
      expect((await store.alerts.getDestination(projectId, destination.id))!.disabledAt).toBeUndefined();

      // Three days after the first failure, the next failure disables it.
      now += day;
      const last = await fire([destination.id]);
      await worker.runOnce();
      const disabled = await store.alerts.getDestination(projectId, destination.id);
      expect(disabled).toMatchObject({ disabledAt: new Date(now), disabledReason: "every delivery failed for 3 days (last: 500)" });
      const attemptsSoFar = receiver.received.length;

      // Disabled: its deliveries wait, untried, until an admin enables it again.
      now += day;
      expect(await worker.runOnce()).toBe(0);
      expect(receiver.received.length).toBe(attemptsSoFar);
      expect((await store.alerts.listDeliveries(projectId, { eventId: last.id, limit: 1 }))[0]!.state).toBe("pending");
      await store.alerts.enableDestination(projectId, destination.id);
      expect(await worker.runOnce()).toBeGreaterThan(0);
    } finally {
      await worker.close();
      await receiver.close();
    }
  });

  it("mails an email destination through SMTP_URL (Mailpit), with the headline, window and dashboard link", async () => {
    // A project of its own, so the first test's deliveries still pending are not in the way.
    projectId = (await store.teams.createOrganization({ name: "mail", project: { name: "p", plan: "free" } })).project.id;
    const { destination } = await destinations(store.alerts, box, { privateUrls: true }).create(projectId, {
      kind: "email",
      name: "",
      emails: ["oncall@example.com", "lead@example.com"],
    });
    const worker = startDeliveryWorker({
      store: store.alerts,
      box,
      retryBaseMs: 1,
      privateUrls: true,
      publicUrl: "https://calltrace.example.com",
      pollMs: 0,
      mail: { transport: smtpTransport(mailpit.smtpUrl), from: "calltrace <alerts@example.com>" },
    });
    try {
      const event = await fire([destination.id], Date.UTC(2026, 10, 26, 12, 0));
      expect(await worker.runOnce()).toBe(1);
      const [message] = (await mailpit.messages()).filter((m) => m.Subject.includes("Error rate"));
      expect(message).toMatchObject({
        Subject: "[calltrace] errors: Error rate of model gpt-4o reached 100 % of 5.0 %: 12.5 %",
        From: { Address: "alerts@example.com" },
      });
      expect(message!.To.map((t) => t.Address).sort()).toEqual(["lead@example.com", "oncall@example.com"]);
      const text = await mailpit.text(message!.ID);
      expect(text).toContain(`Project: ${projectId}`);
      expect(text).toContain("Window: 2026-11-26 11:50 – 2026-11-26 12:00 UTC");
      expect(text).toContain(
        `https://calltrace.example.com/app/p/${projectId}/traces?range=custom&from=2026-11-26T11%3A50&to=2026-11-26T12%3A00&model=gpt-4o`,
      );
      expect((await store.alerts.listDeliveries(projectId, { eventId: event.id, limit: 1 }))[0]).toMatchObject({ state: "delivered" });
    } finally {
      await worker.close();
    }
  });
});

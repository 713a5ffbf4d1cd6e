import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DashboardClient, type Json } from "../dashboard/dashboard-client.js";
import { startTestService, type TestService } from "../support/test-service.js";
import { startWebhookReceiver, type WebhookReceiver, waitFor } from "../support/webhook-receiver.js";

/** AlertService over the dashboard's Connect JSON, as the Alerts page calls it: an owner edits, a viewer reads. */
describe("AlertService", () => {
  let service: TestService;
  let owner: DashboardClient;
  let viewer: DashboardClient;
  let project: string;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    service = await startTestService({ alertRetryBaseMs: 20 });
    owner = new DashboardClient(service.url);
    await owner.signUp("owner@example.com");
    project = owner.project;
    const organizationId = ((await owner.ok("TeamService/ListOrganizations")).organizations as Json[])[0]!.organization.id;
    const invitation = await owner.ok("TeamService/CreateInvitation", { organizationId, email: "viewer@example.com", role: "ROLE_VIEWER" });
    viewer = new DashboardClient(service.url);
    await viewer.signUp("viewer@example.com");
    await viewer.ok("TeamService/AcceptInvitation", { token: String(invitation.url).split("/").pop() });
    receiver = await startWebhookReceiver();
  });
  afterAll(async () => {
    await receiver.close();
  });

  it("creates a webhook with its secret shown once, a rule sending to it, and a test event that arrives signed", async () => {
    const created = await owner.ok("AlertService/CreateDestination", {
      kind: "ALERT_DESTINATION_KIND_WEBHOOK",
      name: "ops",
      url: receiver.url,
    });
    expect(created.secret).toMatch(/^whsec_/);
    const destinationId = created.destination.id as string;
    const listed = await owner.ok("AlertService/ListDestinations", {});
    expect(listed.destinations).toEqual([
      expect.objectContaining({ id: destinationId, kind: "ALERT_DESTINATION_KIND_WEBHOOK", url: receiver.url, name: "ops" }),
    ]);
    expect(JSON.stringify(listed)).not.toContain(String(created.secret).slice(6));
    // Nor is it in the audit log.
    const organizationId = ((await owner.ok("TeamService/ListOrganizations")).organizations as Json[])[0]!.organization.id;
    const audit = await owner.ok("TeamService/ListAuditLog", { organizationId });
    expect((audit.entries as Json[]).map((e) => e.action)).toContain("alert.destination.create");
    expect(JSON.stringify(audit)).not.toContain(String(created.secret).slice(6));

    const rule = (
      await owner.ok("AlertService/CreateRule", {
        rule: {
          kind: "ALERT_KIND_SPEND",
          budgetUsd: 5,
          window: { kind: "ALERT_WINDOW_KIND_DAY" },
          scope: { kind: "ALERT_SCOPE_KIND_TAG", value: "chat" },
          destinationIds: [destinationId],
        },
      })
    ).rule as Json;
    expect(rule).toMatchObject({
      name: "spend alert",
      projectId: project,
      thresholdsPercent: [50, 80, 100],
      budgetUsd: 5,
      destinationIds: [destinationId],
    });
    expect(rule.id).toMatch(/^alr_/);
    // With the rule's current value, measured by the evaluation: no spend yet (0 is left out of the JSON).
    const ruleList = await owner.ok("AlertService/ListRules", {});
    expect(ruleList.rules).toEqual([rule]);
    expect(ruleList.values).toEqual([
      expect.objectContaining({ ruleId: rule.id, limit: 5, windowStart: expect.any(String), measuredAt: expect.any(String) }),
    ]);
    expect((ruleList.values as Json[])[0]!.value).toBeUndefined();

    const event = (await owner.ok("AlertService/SendTestEvent", { destinationId })).event as Json;
    await waitFor(() => receiver.accepted.length === 1, "the test event");
    const [delivery] = receiver.accepted;
    const body = new Webhook(created.secret as string).verify(delivery!.body, delivery!.headers as Record<string, string>) as Json;
    expect(body).toMatchObject({ type: "alert.test", data: { id: event.id, project_id: project, test: true } });
    expect(body.data.dashboard_url).toMatch(new RegExp(`^${service.url}/app/p/${project}/traces\\?range=custom`));

    // The delivery log, which a viewer reads too; then a resend under the same id.
    await waitFor(
      async () =>
        ((await viewer.ok("AlertService/ListDeliveries", { projectId: project })).deliveries as Json[])[0]?.state ===
        "ALERT_DELIVERY_STATE_DELIVERED",
      "the log",
    );
    const log = (await viewer.ok("AlertService/ListDeliveries", { projectId: project, eventId: event.id })).deliveries as Json[];
    expect(log).toEqual([
      expect.objectContaining({
        id: `${event.id}.${destinationId}`,
        eventId: event.id,
        destinationId,
        attempts: [expect.objectContaining({ outcome: "ok", responseCode: 204, trigger: "schedule" })],
      }),
    ]);
    const resent = await owner.ok("AlertService/ResendDelivery", { deliveryId: log[0]!.id });
    expect(resent.delivery).toMatchObject({ state: "ALERT_DELIVERY_STATE_PENDING" });
    await waitFor(() => receiver.accepted.length === 2, "the resent delivery");
    expect(receiver.accepted.map((d) => d.headers["webhook-id"])).toEqual([event.id, event.id]);
    await waitFor(
      async () => ((await owner.ok("AlertService/ListDeliveries", { eventId: event.id })).deliveries as Json[])[0]!.attempts.length === 2,
      "the resend logged",
    );
    const [again] = (await owner.ok("AlertService/ListDeliveries", { eventId: event.id })).deliveries as Json[];
    expect(again!.attempts.map((a: Json) => a.trigger)).toEqual(["schedule", "resend"]);
    expect((await viewer.ok("AlertService/ListEvents", { projectId: project })).events).toEqual([
      expect.objectContaining({ id: event.id, test: true }),
    ]);

    // Rotation: a new secret once, and both sign during the overlap.
    const rotated = await owner.ok("AlertService/RotateDestinationSecret", { destinationId });
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.destination.previousSecretExpiresAt).toBeDefined();
    await owner.ok("AlertService/SendTestEvent", { destinationId });
    await waitFor(() => receiver.accepted.length === 3, "the delivery after rotation");
    for (const secret of [created.secret, rotated.secret] as string[]) {
      new Webhook(secret).verify(receiver.accepted[2]!.body, receiver.accepted[2]!.headers as Record<string, string>);
    }
  });

  it("refuses a rule with INVALID_ARGUMENT naming the field at fault", async () => {
    const refused = async (rule: Json) => (await owner.call("AlertService/CreateRule", { rule })).body;
    expect(await refused({ kind: "ALERT_KIND_SPEND", window: { kind: "ALERT_WINDOW_KIND_DAY" } })).toEqual({
      code: "invalid_argument",
      message: "rule.budget_usd: must be more than 0 and at most 1000000000",
    });
    expect((await refused({ kind: "ALERT_KIND_SPEND", budgetUsd: 5 })).message).toBe(
      "rule.window.kind: must be day, week, month or rolling hours",
    );
    expect(
      (await refused({ kind: "ALERT_KIND_SPEND", budgetUsd: 5, window: { kind: "ALERT_WINDOW_KIND_ROLLING_HOURS", rollingHours: 745 } }))
        .message,
    ).toBe("rule.window.rolling_hours: must be at least 1 and at most 744");
    expect(
      (await refused({ kind: "ALERT_KIND_SPEND", budgetUsd: 5, window: { kind: "ALERT_WINDOW_KIND_DAY" }, thresholdsPercent: [80, 50] }))
        .message,
    ).toBe("rule.thresholds_percent: must be ascending, each once");
    expect((await refused({ kind: "ALERT_KIND_ERRORS", windowMinutes: 10, errorRatePercent: 150 })).message).toBe(
      "rule.error_rate_percent: must be more than 0 and at most 100",
    );
    expect((await refused({ kind: "ALERT_KIND_LATENCY", windowMinutes: 0, p95LatencyMs: 100 })).message).toBe(
      "rule.window_minutes: must be at least 1 and at most 1440",
    );
    expect((await refused({ kind: "ALERT_KIND_UNPRICED", scope: { kind: "ALERT_SCOPE_KIND_KEY", value: "key_none" } })).message).toBe(
      'rule.scope.value: the project has no key "key_none"',
    );
    expect((await refused({ kind: "ALERT_KIND_UNPRICED", scope: { kind: "ALERT_SCOPE_KIND_METADATA", value: "x" } })).message).toBe(
      "rule.scope.metadata_key: must be 1 to 256 characters for a metadata scope",
    );
    expect((await refused({ kind: "ALERT_KIND_UNPRICED", destinationIds: ["dst_none"] })).message).toBe(
      'rule.destination_ids: the project has no destination "dst_none"',
    );
    expect((await refused({})).message).toBe("rule.kind: must be one of spend, errors, latency, unpriced, quota");
    const badUrl = await owner.call("AlertService/CreateDestination", { kind: "ALERT_DESTINATION_KIND_WEBHOOK", url: "ftp://x" });
    expect(badUrl.body).toEqual({ code: "invalid_argument", message: "url: expected an http:// or https:// URL" });
  });

  it("updates, mutes and deletes rules; a viewer reads them and is refused every change", async () => {
    const rule = (
      await owner.ok("AlertService/CreateRule", {
        rule: { kind: "ALERT_KIND_ERRORS", name: "errors", windowMinutes: 10, errorRatePercent: 5, minCalls: 20 },
      })
    ).rule as Json;
    expect(rule).toMatchObject({ thresholdsPercent: [100], windowMinutes: 10, errorRatePercent: 5, minCalls: 20 });
    const updated = (await owner.ok("AlertService/UpdateRule", { rule: { ...rule, errorRatePercent: 10, budgetUsd: 3 } })).rule as Json;
    // A field the kind does not use is not kept.
    expect(updated).toMatchObject({ id: rule.id, errorRatePercent: 10, createdAt: rule.createdAt });
    expect(updated.budgetUsd).toBeUndefined();
    expect((await owner.ok("AlertService/MuteRule", { ruleId: rule.id, muted: true })).rule).toMatchObject({ muted: true });

    const rules = (await viewer.ok("AlertService/ListRules", { projectId: project })).rules as Json[];
    expect(rules.find((r) => r.id === rule.id)).toMatchObject({ muted: true, errorRatePercent: 10 });
    for (const [method, body] of [
      ["CreateRule", { rule: { kind: "ALERT_KIND_UNPRICED" } }],
      ["UpdateRule", { rule: { ...rule } }],
      ["MuteRule", { ruleId: rule.id, muted: false }],
      ["DeleteRule", { ruleId: rule.id }],
      ["CreateDestination", { kind: "ALERT_DESTINATION_KIND_EMAIL", emails: ["v@example.com"] }],
      ["SendTestEvent", { destinationId: "dst_x" }],
      ["ResendDelivery", { deliveryId: "x" }],
    ] as const) {
      const answer = await viewer.call(`AlertService/${method}`, { projectId: project, ...body });
      expect(answer.body, method).toEqual({ code: "permission_denied", message: "your role is viewer; this needs admin or above" });
    }
    // No API key manages alerts, a read key included: AlertService takes a dashboard session only.
    const readKey = (await owner.ok("AccountService/CreateKey", { name: "reader", scope: "KEY_SCOPE_READ" })).plaintext as string;
    const withKey = await fetch(`${service.url}/calltrace.v1.AlertService/ListRules`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${readKey}` },
      body: JSON.stringify({ projectId: project }),
    });
    expect(withKey.status).toBe(401);
    expect((await withKey.json()).code).toBe("unauthenticated");
    await owner.ok("AlertService/DeleteRule", { ruleId: rule.id });
    expect((await owner.call("AlertService/DeleteRule", { ruleId: rule.id })).body).toEqual({
      code: "not_found",
      message: `no rule with id "${rule.id}"`,
    });
  });
});

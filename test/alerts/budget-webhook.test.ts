import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DashboardClient, type Json } from "../dashboard/dashboard-client.js";
import { freePort } from "../support/free-port.js";
import { postTrace, startTestService, traceBody, type TestService } from "../support/test-service.js";
import { startWebhookReceiver, type WebhookReceiver, waitFor } from "../support/webhook-receiver.js";

/**
 * The "done when", end to end over real sockets: a budget crossed by real traffic sent
 * to POST /v1/traces produces one signed webhook that the receiver verifies, within 60 s, though
 * the receiver was down when the alert fired.
 */
describe("a spend budget crossed by real traffic", () => {
  let service: TestService;
  let receiver: WebhookReceiver | undefined;
  beforeAll(async () => {
    service = await startTestService({ alertEvaluateMs: 500, alertRetryBaseMs: 100 });
  });
  afterAll(async () => {
    await receiver?.close();
  });

  it("produces one signed, verified webhook within 60 s, delivered after a receiver outage", { timeout: 120_000 }, async () => {
    const owner = new DashboardClient(service.url);
    await owner.signUp("budget@example.com");
    const key = (await owner.ok("AccountService/CreateKey", { name: "app" })).plaintext as string;
    const port = await freePort();
    const { destination, secret } = await owner.ok("AlertService/CreateDestination", {
      kind: "ALERT_DESTINATION_KIND_WEBHOOK",
      url: `http://127.0.0.1:${port}/hook`,
    });
    const rule = (
      await owner.ok("AlertService/CreateRule", {
        rule: {
          kind: "ALERT_KIND_SPEND",
          name: "daily budget",
          budgetUsd: 0.05,
          window: { kind: "ALERT_WINDOW_KIND_DAY" },
          thresholdsPercent: [100],
          destinationIds: [destination.id],
        },
      })
    ).rule as Json;

    // Ten calls of 1 cent from five concurrent clients: the fifth crosses the budget.
    let crossedAt = 0;
    let spent = 0;
    await Promise.all(
      Array.from({ length: 5 }, async () => {
        for (let i = 0; i < 2; i++) {
          expect((await postTrace(service.url, traceBody(key, { cost_usd: 0.01 }), { key })).status).toBe(202);
          spent += 0.01;
          if (!crossedAt && spent >= 0.05 - 1e-9) crossedAt = Date.now();
        }
      }),
    );
    // The receiver is down when it fires: the first attempt fails and is retried.
    const deliveries = () => owner.ok("AlertService/ListDeliveries", {});
    await waitFor(
      async () => ((await deliveries()).deliveries as Json[] | undefined)?.[0]?.attempts?.length >= 1,
      "a first, failed attempt",
      60_000,
    );
    receiver = await startWebhookReceiver({ secret: secret as string, port });
    await waitFor(() => receiver!.accepted.length >= 1, "the webhook", 60_000);
    const latencyMs = receiver.accepted[0]!.receivedAt - crossedAt;
    console.log(`budget crossed -> verified webhook: ${latencyMs} ms (evaluation every 500 ms, receiver down for the first attempt)`);
    expect(latencyMs).toBeLessThan(60_000);

    await new Promise((r) => setTimeout(r, 1500));
    expect(receiver.accepted).toHaveLength(1);
    const [delivery] = receiver.accepted;
    const body = new Webhook(secret as string).verify(delivery!.body, delivery!.headers as Record<string, string>) as Json;
    expect(body).toMatchObject({
      type: "alert.fired",
      data: { rule_id: rule.id, kind: "ALERT_KIND_SPEND", threshold_percent: 100, threshold_value: 0.05 },
    });
    expect(body.data.measured_value).toBeGreaterThanOrEqual(0.05 - 1e-9);
    expect(delivery!.headers["webhook-id"]).toBe(body.data.id);
    const [logged] = (await deliveries()).deliveries as Json[];
    expect(logged!.state).toBe("ALERT_DELIVERY_STATE_DELIVERED");
    expect(logged!.attempts.map((a: Json) => a.outcome)).toEqual([...Array(logged!.attempts.length - 1).fill("network_error"), "ok"]);
  });
});

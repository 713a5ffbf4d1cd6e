import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { useScaleOutCluster } from "../support/scale-out-cluster.js";
import { postTrace, traceBody } from "../support/test-service.js";
import { waitFor } from "../support/webhook-receiver.js";

/**
 * The "done when", end to end: two service instances on one MongoDB (FerretDB here) and
 * Redis, a daily budget made with the CLI, crossed by concurrent clients sending to both
 * instances. Both run the evaluator; the lease lets one evaluate at a time, and each threshold
 * reaches the receiver once, signed, within the evaluation interval plus delivery.
 */
describe("alert evaluation across two instances", () => {
  const cluster = useScaleOutCluster();

  it("a budget crossed by traffic through both instances fires each threshold once, signed and verified", async () => {
    const { receiver, instances } = cluster;
    const created = JSON.parse(
      cluster.cli(["alerts", "create", "--kind", "spend", "--budget-usd", "0.01", "--window", "day", "--webhook", receiver.url, "--json"]),
    );
    const key = (JSON.parse(cluster.cli(["keys", "create", "--project", created.project, "--json"])) as { key: string }).key;
    await cluster.start(2, { ALERT_EVALUATE_MS: "1000" });
    // Let the evaluator watch the rule's scope (on MongoDB a watch starts 3 s after it is made).
    await new Promise((r) => setTimeout(r, 8000));
    const started = Date.now();
    // Six clients, three per instance: 30 x 0.0005 USD = 0.015 USD, past 50, 80 and 100 % of 0.01.
    await Promise.all(
      Array.from({ length: 6 }, async (_, client) => {
        const url = instances[client % 2]!.url;
        for (let i = 0; i < 5; i++) expect((await postTrace(url, traceBody(key, { cost_usd: 0.0005 }), { key })).status).toBe(202);
      }),
    );
    await waitFor(() => receiver.received.length >= 3, "three deliveries", 60_000);
    const elapsed = Date.now() - started;
    // Long enough for a second evaluation or instance to send a duplicate, were there one.
    await new Promise((r) => setTimeout(r, 5000));
    expect(receiver.received).toHaveLength(3);
    const bodies = receiver.received.map((d) => {
      new Webhook(created.secret).verify(d.body, d.headers as Record<string, string>);
      return JSON.parse(d.body) as { type: string; data: { threshold_percent: number; rule_id: string; dashboard_url: string } };
    });
    expect(new Set(receiver.received.map((d) => d.headers["webhook-id"])).size).toBe(3);
    expect(bodies.map((b) => b.data.threshold_percent).sort((a, b) => a - b)).toEqual([50, 80, 100]);
    for (const b of bodies) {
      expect(b.type).toBe("alert.fired");
      expect(b.data.rule_id).toBe(created.id);
      expect(b.data.dashboard_url).toContain(`/app/p/${created.project}/traces?range=custom`);
    }
    expect(elapsed).toBeLessThan(60_000);
    console.log(`three thresholds delivered ${elapsed} ms after the traffic began`);
  }, 180_000);
});

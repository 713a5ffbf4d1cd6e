import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Webhook } from "standardwebhooks";
import { afterAll, describe, expect, it } from "vitest";
import { AlertEventSchema, AlertKind } from "../../gen/calltrace/v1/alert_pb.js";
import { newId } from "../../src/store/ids.js";
import { openMongoStore } from "../../src/store/mongo/mongo-store.js";
import type { Store } from "../../src/store/store.js";
import { useScaleOutCluster } from "../support/scale-out-cluster.js";
import { waitFor } from "../support/webhook-receiver.js";

/**
 * Two service instances on one MongoDB (FerretDB here, MONGODB_URI's server when set) and one
 * Redis, as docs/scale-out.md runs them: both run a delivery worker over the same outbox, and
 * each event reaches the receiver once.
 */
describe("alert delivery across two instances", () => {
  const cluster = useScaleOutCluster();
  let store: Store;
  afterAll(() => store?.close());

  it("delivers each of 40 events once, signed, whichever instance claims it", async () => {
    const { receiver, instances } = cluster;
    const created = JSON.parse(
      cluster.cli(["alerts", "create", "--kind", "spend", "--budget-usd", "5", "--window", "day", "--webhook", receiver.url, "--json"]),
    );
    await cluster.start(2, { ALERT_RETRY_BASE_MS: "50" });
    store = await openMongoStore(cluster.uri);
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      const event = create(AlertEventSchema, {
        id: newId("evt"),
        projectId: created.project,
        ruleId: created.id,
        kind: AlertKind.SPEND,
        thresholdPercent: 100,
        thresholdValue: 5,
        measuredValue: 5 + i,
        firedAt: timestampFromMs(Date.now()),
      });
      await store.alerts.enqueueEvent(event);
      ids.push(event.id);
    }
    await waitFor(() => receiver.received.length >= ids.length, "40 deliveries", 60_000);
    // Long enough for a second instance's duplicate to arrive, were there one.
    await new Promise((r) => setTimeout(r, 3000));
    expect(receiver.received).toHaveLength(ids.length);
    expect(receiver.received.map((d) => d.headers["webhook-id"]).sort()).toEqual([...ids].sort());
    for (const d of receiver.received) new Webhook(created.secret).verify(d.body, d.headers as Record<string, string>);
    const delivered = await store.alerts.listDeliveries(created.project, { limit: 100 });
    expect(delivered.filter((d) => d.state === "delivered" && d.attempts.length === 1)).toHaveLength(ids.length);
    // Which instance made the attempts, from their logs (reported, not asserted: either may win them all).
    const attemptsBy = instances.map((instance) => instance.lines.filter((line) => line.includes('"alert delivery attempt"')).length);
    expect(attemptsBy.reduce((a, b) => a + b, 0)).toBe(ids.length);
    console.log(`attempts per instance: ${attemptsBy.join(", ")}`);
  }, 180_000);
});

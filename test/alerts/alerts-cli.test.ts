import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Webhook } from "standardwebhooks";
import { afterAll, describe, expect, it } from "vitest";
import { AlertEventSchema, AlertKind } from "../../gen/calltrace/v1/alert_pb.js";
import { newId } from "../../src/store/ids.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { runCli, runCliRaw, startServiceProcess } from "../support/cli.js";
import { freePort } from "../support/free-port.js";
import { tempDir } from "../support/temp-dir.js";
import { startWebhookReceiver, waitFor } from "../support/webhook-receiver.js";

/** `calltrace alerts create|list|delete` on the embedded store, and the outbox surviving `kill -9` of the service. */
const dataDir = tempDir();
const cli = (...args: string[]) => runCli(["alerts", ...args, "--data-dir", dataDir]);
const store = openSqliteStore(dataDir);
afterAll(async () => {
  await store.close();
});

// Each CLI run starts Node afresh: seconds apiece on a busy machine.
describe("calltrace alerts", { timeout: 120_000 }, () => {
  it("creates a rule in the project keys create reaches, with defaults, prints its id and the webhook secret once, lists and deletes it", async () => {
    const created = JSON.parse(
      cli("create", "--kind", "spend", "--budget-usd", "5", "--window", "day", "--webhook", "https://example.com/hook", "--json"),
    );
    expect(created).toEqual({
      id: expect.stringMatching(/^alr_/),
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      project: expect.any(String),
      destination_ids: [expect.any(String)],
    });
    // The same project an ingest key made without --project lands in.
    const key = JSON.parse(runCli(["keys", "create", "--plan", "free", "--json", "--data-dir", dataDir]));
    expect(created.project).toBe(key.project);

    const scoped = JSON.parse(
      cli("create", "--kind", "spend", "--budget-usd", "50", "--window", "24h", "--tag", "chat", "--thresholds", "80,100", "--json"),
    );
    expect(scoped.secret).toBe("");
    const byMetadata = JSON.parse(
      cli(
        "create",
        "--kind",
        "errors",
        "--window-minutes",
        "10",
        "--error-rate",
        "5",
        "--min-calls",
        "20",
        "--metadata",
        "feature=search",
        "--json",
      ),
    );
    const listed = JSON.parse(cli("list", "--json"));
    expect(listed).toEqual([
      expect.objectContaining({
        id: created.id,
        kind: "spend",
        scope: "project",
        thresholds: [50, 80, 100],
        destination_ids: created.destination_ids,
        muted: false,
      }),
      expect.objectContaining({ id: scoped.id, kind: "spend", scope: "tag chat", thresholds: [80, 100], destination_ids: [] }),
      expect.objectContaining({ id: byMetadata.id, kind: "errors", scope: "metadata feature=search", thresholds: [100] }),
    ]);
    const rule = await store.alerts.getRule(created.project, scoped.id);
    expect(rule).toMatchObject({ budgetUsd: 50, window: { rollingHours: 24 } });
    // The secret is stored sealed, and the service can sign with it (the key file is shared through DATA_DIR).
    const destination = await store.alerts.getDestination(created.project, created.destination_ids[0]);
    expect(JSON.stringify(destination)).not.toContain(created.secret.slice(6));

    expect(cli("delete", scoped.id).trim()).toBe(`deleted ${scoped.id}`);
    expect(JSON.parse(cli("list", "--json")).map((r: { id: string }) => r.id)).toEqual([created.id, byMetadata.id]);
    // --project names another project; an unknown one is refused.
    const other = (await store.teams.createOrganization({ name: "o", project: { name: "p", plan: "free" } })).project.id;
    cli("create", "--kind", "unpriced", "--project", other);
    expect(JSON.parse(cli("list", "--project", other, "--json"))).toHaveLength(1);
    expect(runCliRaw(["alerts", "list", "--project", "prj_none", "--data-dir", dataDir]).stderr).toContain("no project prj_none");
  });

  it.each([
    [["--kind", "spend", "--window", "day"], "rule.budget_usd: must be more than 0 and at most 1000000000 (--budget-usd)"],
    [["--kind", "spend", "--budget-usd", "5", "--window", "fortnight"], "--window: day, week, month, or rolling hours such as 24h"],
    [
      ["--kind", "spend", "--budget-usd", "5", "--window", "day", "--thresholds", "100,80"],
      "rule.thresholds_percent: must be ascending, each once (--thresholds)",
    ],
    [["--kind", "nope"], "--kind: one of spend, errors, latency, unpriced, quota"],
    [["--kind", "unpriced", "--tag", "a", "--user", "b"], "give at most one scope"],
    [["--kind", "quota", "--key", "key_none"], 'rule.scope.value: the project has no key "key_none" (the scope flags)'],
    [["--kind", "unpriced", "--webhook", "ftp://x"], "url: expected an http:// or https:// URL"],
  ])("refuses %j, exit 2, saying why, and leaves nothing behind", async (args, message) => {
    const project = (await store.teams.defaultProject("free")).id;
    const count = async () => (await store.alerts.listRules(project)).length + (await store.alerts.listDestinations(project)).length;
    const before = await count();
    const result = runCliRaw(["alerts", "create", ...args, "--data-dir", dataDir]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(message);
    expect(await count()).toBe(before);
  });
});

describe("the outbox across kill -9", { timeout: 120_000 }, () => {
  it("a delivery pending when the service is killed, and one enqueued while it is down, are delivered after the restart under their ids, once each", async () => {
    const port = await freePort();
    const created = JSON.parse(
      cli("create", "--kind", "spend", "--budget-usd", "5", "--window", "day", "--webhook", `http://127.0.0.1:${port}/hook`, "--json"),
    );
    const env = { ALERT_RETRY_BASE_MS: "100" };
    const server = await startServiceProcess(["--data-dir", dataDir], env);
    const fire = async () => {
      const event = create(AlertEventSchema, {
        id: newId("evt"),
        projectId: created.project,
        ruleId: created.id,
        ruleName: "budget",
        kind: AlertKind.SPEND,
        thresholdPercent: 100,
        thresholdValue: 5,
        measuredValue: 5.5,
        firedAt: timestampFromMs(Date.now()),
      });
      expect(await store.alerts.enqueueEvent(event)).toBe(true);
      return event;
    };
    const deliveryOf = async (eventId: string) => (await store.alerts.listDeliveries(created.project, { eventId, limit: 1 }))[0]!;

    // The receiver is down: the first attempt fails and the delivery waits for its next one.
    const first = await fire();
    await waitFor(async () => (await deliveryOf(first.id)).attempts.length >= 1, "a failed attempt");
    server.child.kill("SIGKILL");
    expect(await server.exited).toBe("SIGKILL");
    expect(await deliveryOf(first.id)).toMatchObject({ state: "pending" });
    const second = await fire();

    const receiver = await startWebhookReceiver({ secret: created.secret, port });
    const restarted = await startServiceProcess(["--data-dir", dataDir], env);
    try {
      await waitFor(
        async () => (await deliveryOf(first.id)).state === "delivered" && (await deliveryOf(second.id)).state === "delivered",
        "both deliveries",
        20_000,
      );
      await new Promise((r) => setTimeout(r, 500));
      expect(receiver.accepted.map((d) => d.headers["webhook-id"]).sort()).toEqual([first.id, second.id].sort());
      expect(receiver.received).toHaveLength(2);
      for (const d of receiver.accepted)
        expect(new Webhook(created.secret).verify(d.body, d.headers as Record<string, string>)).toBeTruthy();
    } finally {
      restarted.child.kill("SIGTERM");
      await restarted.exited;
      await receiver.close();
    }
  });
});

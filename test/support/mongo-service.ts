import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { openMongoStore } from "../../src/store/mongo/mongo-store.js";
import { runCli, startServiceProcess, type ServiceProcess } from "./cli.js";
import { tempDir } from "./temp-dir.js";

/** A plan whose limits no test load reaches. */
const plans = { bulk: { per_minute: 10_000_000, per_month: 1_000_000_000 } };

/** `calltrace serve` processes on one MongoDB database, and a key on a plan without practical limits. */
export async function mongoServiceSetup(uri: string) {
  const dir = tempDir();
  const plansFile = join(dir, "plans.json");
  writeFileSync(plansFile, JSON.stringify(plans));
  const args = ["--mongodb-uri", uri, "--plans-file", plansFile, "--data-dir", dir];
  const key = runCli(["keys", "create", "--plan", "bulk", ...args]).trim();
  return {
    key,
    /** Starts the service; env sets options such as WRITE_TIMEOUT_MS. */
    start: (env: NodeJS.ProcessEnv = {}): Promise<ServiceProcess> => startServiceProcess(args, { LOG_LEVEL: "info", ...env }),
  };
}

/** How often each tokens_in value is stored: the load helper numbers its traces that way. */
export async function storedCounts(uri: string): Promise<Map<number, number>> {
  const store = await openMongoStore(uri);
  const counts = new Map<number, number>();
  try {
    for await (const trace of store.exportTraces({})) counts.set(trace.tokensIn, (counts.get(trace.tokensIn) ?? 0) + 1);
  } finally {
    await store.close();
  }
  return counts;
}

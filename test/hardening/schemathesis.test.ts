import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { mintApiKey } from "../../src/auth/api-key.js";
import { repoRoot } from "../support/cli.js";
import { runProcess as run } from "../support/run-process.js";
import { startTestService, traceBody, type TestService } from "../support/test-service.js";
import { tempDir } from "../support/temp-dir.js";
import { expectServed } from "./support/attack.js";

// Property-based fuzzing of the REST surface from its OpenAPI document, with schemathesis (PyPI)
// against the live service: positive and negative data, every check schemathesis has, and the
// stateful phase (the 202's link: a retry with the same Idempotency-Key). At least 2,000
// requests. Its venv is .venv-hardening/, made here when missing, from requirements.txt.
const venv = join(repoRoot, ".venv-hardening");
const requirements = join(repoRoot, "test/hardening/requirements.txt");
const schemathesisBin = join(venv, "bin/schemathesis");
const pinned = /^schemathesis==(\S+)$/m.exec(readFileSync(requirements, "utf8"))?.[1];
const python = process.env.PYTHON ?? "python3";

async function ensureSchemathesis(): Promise<void> {
  if (!pinned) throw new Error(`${requirements} pins no schemathesis version`);
  if (existsSync(schemathesisBin)) {
    const version = await run(schemathesisBin, ["--version"], { timeoutMs: 60_000 });
    if (version.output.includes(pinned)) return;
  }
  const steps: [string, string[]][] = [
    [python, ["-m", "venv", venv]],
    [join(venv, "bin/python"), ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r", requirements]],
  ];
  for (const [command, args] of steps) {
    const result = await run(command, args, { timeoutMs: 540_000 });
    if (result.status !== 0) {
      throw new Error(
        `schemathesis ${pinned} is needed for the fuzz test and could not be installed: \`${command} ${args.join(" ")}\` exited ${result.status}:\n${result.output}\n` +
          "Install Python 3 with venv and pip (Debian: python3-venv python3-pip), with access to PyPI.",
      );
    }
  }
}

let service: TestService;
let key: string;
let readKey: string;

beforeAll(async () => {
  await ensureSchemathesis();
  // Reads unlimited too: the fuzz run is about the surface, the read limit has its own tests.
  service = await startTestService({ plans: { pro: { per_minute: 100_000_000, per_month: 1_000_000_000 } }, readPerMinute: 100_000_000 });
  const ingest = await service.createKey("pro");
  key = ingest.key;
  const minted = mintApiKey();
  await service.store.keys.createKey({
    accountId: ingest.accountId,
    name: "fuzz reads",
    scope: "read",
    hash: minted.hash,
    prefix: minted.prefix,
  });
  readKey = minted.plaintext;
  // A stored run, for the hooks to ask GET /v1/runs/{id} for (a generated id is never one).
  for (const latency_ms of [300, 900]) {
    const stored = await fetch(`${service.url}/v1/traces`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: JSON.stringify(traceBody(key, { session_id: fuzzRun.slice("session:".length), latency_ms })),
    });
    expect(stored.status).toBe(202);
  }
}, 600_000);

const fuzzRun = "session:fuzz-run";

/** The read API's operations: fuzzed in a run of their own with a read key (the ingest key is 403 there). */
const readOperations = "^(listTraces|getMetrics|getErrorGroups|listRuns|getRun)$";

/** One schemathesis run against the service with `key`, over the operations `filter` selects. */
async function fuzz(key: string, filter: string[], phases: string, maxExamples: number) {
  const workDir = tempDir();
  const cassette = join(workDir, "cassette.yaml");
  const seed = process.env.CALLTRACE_FUZZ_SEED ?? String(Math.floor(Math.random() * 2 ** 31));
  const args = [
    "run",
    `${service.url}/openapi.json`,
    "--url",
    service.url,
    "--header",
    `Authorization: Bearer ${key}`,
    ...filter,
    "--checks",
    "all",
    "--mode",
    "all",
    "--phases",
    phases,
    "--max-examples",
    String(maxExamples),
    "--workers",
    "2",
    "--seed",
    seed,
    "--generation-database",
    "none",
    "--no-color",
    "--report",
    "vcr",
    "--report-vcr-path",
    cassette,
  ];
  const result = await run(schemathesisBin, args, {
    cwd: workDir,
    env: { SCHEMATHESIS_HOOKS: "schemathesis_hooks", PYTHONPATH: join(repoRoot, "test/hardening"), CALLTRACE_FUZZ_KEY: key, CALLTRACE_FUZZ_RUN: fuzzRun },
    timeoutMs: 300_000,
  });
  const requests = existsSync(cassette) ? (readFileSync(cassette, "utf8").match(/^- id: /gm) ?? []).length : 0;
  const summary = `schemathesis (seed ${seed}, rerun with CALLTRACE_FUZZ_SEED=${seed}) sent ${requests} requests and exited ${result.status}:\n${result.output.slice(-12_000)}`;
  return { result, requests, summary };
}

describe("schemathesis fuzzes the REST surface from the OpenAPI document", () => {
  it("2,000+ generated requests (positive, negative, stateful): no 5xx, nothing the document does not allow, no crash", async () => {
    const { result, requests, summary } = await fuzz(
      key,
      ["--exclude-operation-id-regex", readOperations],
      "examples,coverage,fuzzing,stateful",
      300,
    );
    expect(result.status, summary).toBe(0);
    expect(result.output, summary).toMatch(/No issues found/);
    expect(requests, summary).toBeGreaterThanOrEqual(2000);
    await expectServed(service.url, key);
  }, 360_000);

  it("the read API with a read key: no 5xx, nothing the document does not allow, no crash", async () => {
    // No stateful phase: the read routes have no links.
    const { result, requests, summary } = await fuzz(
      readKey,
      ["--include-operation-id-regex", readOperations],
      "examples,coverage,fuzzing",
      150,
    );
    expect(result.status, summary).toBe(0);
    expect(result.output, summary).toMatch(/No issues found/);
    expect(result.output, summary).not.toMatch(/Authentication failed/);
    expect(requests, summary).toBeGreaterThanOrEqual(300);
    await expectServed(service.url, key);
  }, 360_000);
});

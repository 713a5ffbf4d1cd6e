import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "../support/cli.js";
import { freePort } from "../support/free-port.js";
import { runProcess } from "../support/run-process.js";
import { tempDir } from "../support/temp-dir.js";
import { startTestService, type TestService } from "../support/test-service.js";
import { otelEnvironment, storedFor } from "./interop.js";

// The "done when": a Collector at its defaults in front of calltrace loses nothing. A real
// OpenTelemetry Collector (built by scripts/build-otelcol.sh with the Collector's builder) runs
// docs/otlp.md's recipe as written, only its endpoints changed; an application's OTLP exporter
// sends it a burst of calls whose spans carry their prompts (content capture), so the Collector's
// batch is many times MAX_BODY_BYTES; every call must be stored, through either exporter.

const burst = 80;
const promptBytes = 8 * 1024;

/** The Collector binary; a missing one fails the suite loudly, with the command that builds it. */
function collectorBinary(): string {
  const binary = execFileSync("bash", ["scripts/build-otelcol.sh", "--where"], { cwd: repoRoot, encoding: "utf8" }).trim();
  if (!existsSync(binary)) {
    throw new Error(
      `the Collector test needs the OpenTelemetry Collector at ${binary}; build it once (about 8 minutes, from the Go module proxy): bash scripts/build-otelcol.sh`,
    );
  }
  return binary;
}

/** docs/otlp.md's Collector recipe, the YAML block after its `collector-recipe` marker. */
function recipe(): string {
  const doc = readFileSync(join(repoRoot, "docs/otlp.md"), "utf8");
  const block = /<!-- collector-recipe -->\n```yaml\n([\s\S]*?)```/.exec(doc);
  if (!block) throw new Error("docs/otlp.md has no collector-recipe YAML block");
  return block[1]!;
}

let service: TestService;
let binary: string;

beforeAll(async () => {
  binary = collectorBinary();
  service = await startTestService(); // at its defaults: MAX_BODY_BYTES 64 KiB, OTLP_MAX_BODY_BYTES 16 MiB
});

describe.each(["otlp_http", "otlp_grpc"])("a Collector at its defaults forwarding with %s", (exporter) => {
  let collector: ChildProcess;
  let log = "";
  let accountId: string;
  let sent: { exports: { code: number; error?: string }[] };

  beforeAll(async () => {
    const created = await service.createKey("pro");
    accountId = created.accountId;
    const [grpcPort, httpPort] = [await freePort(), await freePort()];
    const config = join(tempDir(), "collector.yaml");
    writeFileSync(config, recipe().replaceAll("calltrace.example.internal:8080", `127.0.0.1:${service.port}`));
    collector = spawn(
      binary,
      [
        `--config=${config}`,
        // Free ports for this run (the recipe's receivers take the defaults, 4317 and 4318), no
        // metrics port of its own, and the exporter under test.
        `--set=receivers::otlp::protocols::grpc::endpoint=127.0.0.1:${grpcPort}`,
        `--set=receivers::otlp::protocols::http::endpoint=127.0.0.1:${httpPort}`,
        "--set=service::telemetry::metrics::level=none",
        `--set=service::pipelines::traces::exporters=[${exporter}/calltrace]`,
      ],
      { env: { ...process.env, CALLTRACE_API_KEY: created.key }, stdio: ["ignore", "pipe", "pipe"] },
    );
    collector.stdout!.on("data", (chunk: Buffer) => (log += chunk.toString()));
    collector.stderr!.on("data", (chunk: Buffer) => (log += chunk.toString()));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the Collector did not start in 30 s:\n${log}`)), 30_000);
      const check = () => {
        if (log.includes("Everything is ready")) resolve();
        else if (collector.exitCode !== null) reject(new Error(`the Collector exited (${collector.exitCode}):\n${log}`));
        else return;
        clearTimeout(timer);
        collector.stderr!.off("data", check);
        collector.off("exit", check);
      };
      collector.stderr!.on("data", check);
      collector.on("exit", check);
    });

    const plan = Array.from({ length: burst }, (_, i) => ({
      name: "chat gpt-4o-mini",
      durationMs: 300 + i,
      attributes: {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.usage.input_tokens": 1000 + i,
        "gen_ai.usage.output_tokens": 100,
        "gen_ai.prompt": `${i} ${"p".repeat(promptBytes)}`,
      },
    }));
    // The application knows only the Collector (no key: the Collector adds it).
    const env = {
      ...otelEnvironment(service, ""),
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${httpPort}`,
      OTEL_EXPORTER_OTLP_HEADERS: "",
    };
    const result = await runProcess(process.execPath, ["test/otlp-interop/genai_spans.mjs", "proto"], {
      env,
      input: JSON.stringify(plan),
      timeoutMs: 60_000,
    });
    expect(result.status, result.output).toBe(0);
    sent = JSON.parse(result.stdout);
  }, 90_000);

  afterAll(async () => {
    if (!collector || collector.exitCode !== null) return;
    const exited = new Promise((resolve) => collector.once("exit", resolve));
    collector.kill("SIGTERM");
    await exited;
  });

  it("the application's Exports reach the Collector", () => {
    expect(sent.exports.length).toBeGreaterThan(0);
    expect(sent.exports.filter((e) => e.code !== 0)).toEqual([]);
  });

  it(`stores all ${burst} calls of the burst, once each, though the batch is many times MAX_BODY_BYTES`, async () => {
    expect(burst * promptBytes).toBeGreaterThan(8 * service.config.maxBodyBytes);
    await expect.poll(async () => (await storedFor(service, accountId)).length, { timeout: 20_000 }).toBe(burst);
    const stored = await storedFor(service, accountId);
    expect(new Set(stored.map((t) => t.tokensIn)).size).toBe(burst);
    expect(stored.every((t) => t.serviceName === "interop-js-app" && t.model === "gpt-4o-mini")).toBe(true);
  });

  it("the Collector logged no refusal and dropped nothing", () => {
    expect(log).not.toMatch(/Dropping data|not retryable|Exporting failed|error/i);
  });
});

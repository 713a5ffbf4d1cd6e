import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { goTool } from "../support/go-tools.js";
import { startTestService, type TestService } from "../support/test-service.js";

// Clients generated from our protos by the recipes in docs/codegen.md, in Go (grpc-go and
// connect-go) and Python (grpcio and connect-python), built and run against a real server. Each
// checks success, UNAUTHENTICATED, INVALID_ARGUMENT with a google.rpc.BadRequest and
// RESOURCE_EXHAUSTED with a google.rpc.RetryInfo (test/codegen/go/main.go, python/consumer.py).
const run = promisify(execFile);
const root = new URL("../..", import.meta.url).pathname;
const here = join(root, "test/codegen");
const venv = join(root, ".venv-codegen");
const requirements = join(here, "python/requirements.txt");
const python = process.env.PYTHON ?? "python3";
const plugins = ["protoc-gen-go", "protoc-gen-go-grpc", "protoc-gen-connect-go"] as const;
const minutes = 60_000;

let service: TestService;
let address: string;
let goConsumer: string;
let pythonGen: string;

/** The venv with the Python generator and runtimes, made when missing or not as pinned. */
async function pythonVenv(): Promise<string> {
  const bin = join(venv, "bin");
  const frozen = existsSync(join(bin, "python"))
    ? (await run(join(bin, "python"), ["-m", "pip", "freeze"]).catch(() => ({ stdout: "" }))).stdout.toLowerCase()
    : "";
  const pinned = readFileSync(requirements, "utf8").trim().split("\n");
  if (pinned.every((line) => frozen.includes(line.toLowerCase()))) return bin;
  try {
    await run(python, ["-m", "venv", venv]);
    await run(join(bin, "python"), ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r", requirements], { timeout: 9 * minutes });
  } catch (error) {
    throw new Error(`the Python codegen consumer needs ${requirements} in ${venv}: ${(error as Error).message}\n` +
      "Install Python 3 with venv and pip (Debian: python3-venv python3-pip), with access to PyPI.");
  }
  return bin;
}

beforeAll(async () => {
  // Each consumer uses its own key, on a plan that refuses the fifth request of a minute. The
  // consumers check answers, not retries: a commit may take long on a loaded machine, so no 503.
  service = await startTestService({ plans: { free: { per_minute: 4, per_month: 1000 } }, writeTimeoutMs: 60_000 });
  address = new URL(service.url).host;
  const scratch = mkdtempSync(join(tmpdir(), "calltrace-codegen-"));

  const goPath = [...new Set(plugins.map((p) => dirname(goTool(p))))].join(":");
  const goEnv = { ...process.env, PATH: `${goPath}:${process.env.PATH}` };
  rmSync(join(here, "go/gen"), { recursive: true, force: true });
  await run("npx", ["buf", "generate"], { cwd: join(here, "go"), env: goEnv });
  goConsumer = join(scratch, "consumer");
  await run("go", ["build", "-o", goConsumer, "."], { cwd: join(here, "go"), env: goEnv, timeout: 9 * minutes });

  const bin = await pythonVenv();
  pythonGen = join(here, "python/gen");
  rmSync(pythonGen, { recursive: true, force: true });
  await run("bash", [join(here, "python/generate.sh"), root, pythonGen], { env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } });
}, 20 * minutes);

async function consumer(command: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<string[]> {
  const { key } = await service.createKey("free");
  const { stdout } = await run(command, args, { env: { ...process.env, ...env, CALLTRACE_API_KEY: key }, timeout: 2 * minutes });
  return stdout.trim().split("\n");
}

const checks = ["ok success", "ok unauthenticated", "ok invalid argument with BadRequest", "ok resource exhausted with RetryInfo"];

describe("codegen consumers built by docs/codegen.md, against a real server", () => {
  it.each(["grpc", "connect"])("Go, %s client", async (client) => {
    expect(await consumer(goConsumer, ["-client", client, "-address", address])).toEqual(checks);
  });

  it.each(["grpc", "connect"])("Python, %s client", async (client) => {
    const lines = await consumer(join(venv, "bin/python"), [join(here, "python/consumer.py"), client, address], { PYTHONPATH: pythonGen });
    expect(lines).toEqual(checks);
  });
});

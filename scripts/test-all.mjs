#!/usr/bin/env node
// The whole test suite: the service (vitest), the TypeScript SDK (vitest) and the Python SDK
// (pytest). First installs what the tests run and is missing (scripts/install-test-deps.sh: Debian
// packages, Go tools, FerretDB, the Python venvs), and the SDKs' test dependencies; runs every
// suite even when an earlier one fails, then prints one total line and exits non-zero on any failure.
//
// `npm test -- <tier>...` runs only those tiers: unit, store, browser, interop (the service's
// vitest projects, vitest.config.ts) and sdk (both SDKs' suites).
// The service's tiers and the SDK suites run at the same time (most of their time is spent
// waiting on servers and child processes); the service's output streams, the SDK suites' is
// printed whole as each ends. CALLTRACE_TEST_SERIAL=1 runs them one after another.
import { spawn, spawnSync } from "node:child_process";
import { createWriteStream, existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { junitReport, vitestReport, withStatus } from "./test-reports.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const reports = mkdtempSync(join(tmpdir(), "calltrace-test-"));
const python = process.env.PYTHON ?? "python3";
const serviceTiers = ["unit", "store", "browser", "interop"];

/** Runs a command; resolves with its exit status. `log` (a writable stream) takes its output instead of this process's. */
function run(command, args, options = {}) {
  const { log, ...spawnOptions } = options;
  (log ?? process.stdout).write(`\n$ ${[command, ...args].join(" ")}${options.cwd ? `   (in ${options.cwd})` : ""}\n`);
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      stdio: log ? ["ignore", "pipe", "pipe"] : "inherit",
      cwd: root,
      ...spawnOptions,
      env: { ...process.env, ...options.env },
    });
    if (log) {
      child.stdout.pipe(log, { end: false });
      child.stderr.pipe(log, { end: false });
    }
    child.on("error", reject);
    child.on("close", (status) => resolve(status ?? 1));
  });
}

async function must(command, args, options) {
  const status = await run(command, args, options);
  if (status !== 0) throw new Error(`${command} ${args.join(" ")} exited ${status}`);
}

/** Makes (when missing) the virtualenv at `dir` and installs `pipArgs` into it; answers its python. */
async function pythonVenv(dir, pipArgs, options) {
  const venvPython = join(dir, "bin", "python");
  if (!existsSync(venvPython)) await must(python, ["-m", "venv", dir], options);
  await must(venvPython, ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", ...pipArgs], options);
  return venvPython;
}

const suites = [
  {
    name: "service",
    tiers: serviceTiers,
    run: async (tiers, log) => {
      const out = join(reports, "service.json");
      const projects = tiers.length === serviceTiers.length ? [] : tiers.map((tier) => `--project=${tier}`);
      const args = ["vitest", "run", ...projects, "--reporter=default", "--reporter=json", `--outputFile.json=${out}`];
      // The run first: its report is read once it is written.
      const status = await run("npx", args, { log });
      return withStatus(vitestReport(out, root), status, "service");
    },
  },
  {
    name: "sdk/typescript",
    tiers: ["sdk"],
    run: async (_tiers, log) => {
      const cwd = join(root, "sdk/typescript");
      if (!existsSync(join(cwd, "node_modules"))) await must("npm", ["ci", "--no-audit", "--no-fund"], { cwd, log });
      const out = join(reports, "sdk-typescript.json");
      const status = await run("npm", ["test", "--", "--reporter=default", "--reporter=json", `--outputFile.json=${out}`], { cwd, log });
      return withStatus(vitestReport(out, root), status, "sdk/typescript");
    },
  },
  {
    name: "sdk/python",
    tiers: ["sdk"],
    // The SDK as users get it: `python -m build` makes the sdist and, from it, the wheel; the wheel
    // is installed into a fresh virtualenv, and the tests run there against it, not the source.
    run: async (_tiers, log) => {
      // `reports` is a new directory each run: the virtualenv is fresh.
      const venvPython = await pythonVenv(join(reports, "venv-sdk-python"), ["-r", "sdk/python/requirements-test.txt"], { log });
      const dist = join(reports, "dist-sdk-python");
      await must(venvPython, ["-m", "build", "sdk/python", "--outdir", dist], { log });
      const wheels = readdirSync(dist).filter((name) => /^calltrace_sdk-.*\.whl$/.test(name));
      if (wheels.length !== 1) throw new Error(`expected one calltrace_sdk wheel in ${dist}, found: ${wheels.join(", ") || "none"}`);
      await must(venvPython, ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", join(dist, wheels[0])], { log });
      const out = join(reports, "sdk-python.xml");
      // CALLTRACE_PYTHON_SDK=e2e: only the tests that start the calltrace service on this Node
      // (tests/test_e2e_*.py); the rest do not depend on Node's version (.ci/run's second Node).
      const e2eOnly = process.env.CALLTRACE_PYTHON_SDK === "e2e";
      const selected = e2eOnly ? readdirSync(join(root, "sdk/python/tests")).filter((name) => /^test_e2e_.*\.py$/.test(name)).map((name) => `sdk/python/tests/${name}`) : ["sdk/python"];
      const status = await run(venvPython, ["-m", "pytest", ...selected, `--junitxml=${out}`, "-q"], {
        env: { CALLTRACE_SDK_FROM: "wheel" },
        log,
      });
      return withStatus(junitReport(out), status, "sdk/python");
    },
  },
];

// What to run: tiers, or (as before tiers) suite names.
const asked = process.argv.slice(2);
const known = new Set([...serviceTiers, "sdk", ...suites.map((suite) => suite.name)]);
const unknown = asked.filter((name) => !known.has(name));
if (unknown.length > 0) {
  console.error(`unknown tier: ${unknown.join(", ")}; the tiers are ${[...serviceTiers, "sdk"].join(", ")}`);
  process.exit(2);
}
const chosen = suites
  .map((suite) => ({
    suite,
    tiers: asked.length === 0 || asked.includes(suite.name) ? suite.tiers : suite.tiers.filter((tier) => asked.includes(tier)),
  }))
  .filter(({ tiers }) => tiers.length > 0);

// What the tests run for real; a failed install stops here with its reason, before any suite.
await must("bash", [join(root, "scripts/install-test-deps.sh")]);
// The Go tools it installs (grpcurl, mailpit, ferretdb, the protoc plugins) are in GOPATH/bin.
process.env.PATH = `${join(spawnSync("go", ["env", "GOPATH"], { encoding: "utf8" }).stdout.trim(), "bin")}:${process.env.PATH}`;

const serial = process.env.CALLTRACE_TEST_SERIAL === "1";
const started = performance.now();
/** Runs one suite: the first streams its output, the others' is printed whole once they end. */
async function runSuite({ suite, tiers }, index) {
  const logFile = join(reports, `${suite.name.replace("/", "-")}.log`);
  const log = index === 0 || serial ? undefined : createWriteStream(logFile);
  let report;
  try {
    report = await suite.run(tiers, log);
  } catch (error) {
    report = { counts: [0, 1, 0], failures: [`${suite.name}: ${error.message}`] };
  }
  if (log) {
    await new Promise((resolve) => log.end(resolve));
    process.stdout.write(`\n===== ${suite.name} =====\n${readFileSync(logFile, "utf8")}===== ${suite.name} end =====\n`);
  }
  const seconds = Math.round((performance.now() - started) / 1000);
  const which = tiers.length < suite.tiers.length ? ` (${tiers.join(", ")})` : "";
  const { counts, failures } = report;
  return { counts, failures, line: `${suite.name}${which}: ${counts[0]} passed, ${counts[1]} failed, ${counts[2]} skipped (${seconds} s)` };
}
const results = [];
if (serial) for (const [i, entry] of chosen.entries()) results.push(await runSuite(entry, i));
else results.push(...(await Promise.all(chosen.map(runSuite))));

const totals = [0, 1, 2].map((i) => results.reduce((sum, { counts }) => sum + counts[i], 0));
console.log(`\n${results.map(({ line }) => line).join("\n")}`);
console.log(`total: ${totals[0]} passed, ${totals[1]} failed${totals[2] ? `, ${totals[2]} skipped` : ""}`);
// Last, so that a log's tail names what failed.
const failures = results.flatMap(({ failures }) => failures);
if (failures.length > 0) console.log(`\nfailed:\n${failures.map((line) => `- ${line}`).join("\n")}`);
process.exitCode = totals[1] > 0 ? 1 : 0;

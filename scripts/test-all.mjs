#!/usr/bin/env node
// The whole test suite: the service (vitest), the TypeScript SDK (vitest) and the Python SDK
// (pytest). First installs what the tests run and is missing (scripts/install-test-deps.sh: Debian
// packages, Go tools, FerretDB, the Python venvs), and the SDKs' test dependencies; runs every
// suite even when an earlier one fails, then prints one total line and exits non-zero on any failure.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const reports = mkdtempSync(join(tmpdir(), "calltrace-test-"));
const python = process.env.PYTHON ?? "python3";

function run(command, args, options = {}) {
  console.log(`\n$ ${[command, ...args].join(" ")}${options.cwd ? `   (in ${options.cwd})` : ""}`);
  const result = spawnSync(command, args, { stdio: "inherit", cwd: root, ...options, env: { ...process.env, ...options.env } });
  if (result.error) throw result.error;
  return result.status ?? 1;
}

function must(command, args, options) {
  const status = run(command, args, options);
  if (status !== 0) throw new Error(`${command} ${args.join(" ")} exited ${status}`);
}

/** Makes (when missing) the virtualenv at `dir` and installs `pipArgs` into it; answers its python. */
function pythonVenv(dir, pipArgs) {
  const venvPython = join(dir, "bin", "python");
  if (!existsSync(venvPython)) must(python, ["-m", "venv", dir]);
  must(venvPython, ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", ...pipArgs]);
  return venvPython;
}

/** Counts from a vitest JSON report: [passed, failed, skipped]. */
function vitestCounts(file) {
  if (!existsSync(file)) return [0, 1, 0];
  const report = JSON.parse(readFileSync(file, "utf8"));
  const skipped = report.numPendingTests + report.numTodoTests;
  return [report.numPassedTests, report.numFailedTests + (report.success || report.numFailedTests ? 0 : 1), skipped];
}

/** Counts from a JUnit XML report (pytest): [passed, failed, skipped]. */
function junitCounts(file) {
  if (!existsSync(file)) return [0, 1, 0];
  const xml = readFileSync(file, "utf8");
  const attr = (name) => Number(new RegExp(`<testsuite[^>]*\\s${name}="(\\d+)"`).exec(xml)?.[1] ?? 0);
  const failed = attr("failures") + attr("errors");
  const skipped = attr("skipped");
  return [attr("tests") - failed - skipped, failed, skipped];
}

const suites = [
  {
    name: "service",
    run: () => {
      const out = join(reports, "service.json");
      const status = run("npx", ["vitest", "run", "--reporter=default", "--reporter=json", `--outputFile.json=${out}`]);
      return withStatus(vitestCounts(out), status);
    },
  },
  {
    name: "sdk/typescript",
    run: () => {
      const cwd = join(root, "sdk/typescript");
      if (!existsSync(join(cwd, "node_modules"))) must("npm", ["ci", "--no-audit", "--no-fund"], { cwd });
      const out = join(reports, "sdk-typescript.json");
      const status = run("npm", ["test", "--", "--reporter=default", "--reporter=json", `--outputFile.json=${out}`], { cwd });
      return withStatus(vitestCounts(out), status);
    },
  },
  {
    name: "sdk/python",
    // The SDK as users get it: `python -m build` makes the sdist and, from it, the wheel; the wheel
    // is installed into a fresh virtualenv, and the tests run there against it, not the source.
    run: () => {
      // `reports` is a new directory each run: the virtualenv is fresh.
      const venvPython = pythonVenv(join(reports, "venv-sdk-python"), ["-r", "sdk/python/requirements-test.txt"]);
      const dist = join(reports, "dist-sdk-python");
      must(venvPython, ["-m", "build", "sdk/python", "--outdir", dist]);
      const wheels = readdirSync(dist).filter((name) => /^calltrace_sdk-.*\.whl$/.test(name));
      if (wheels.length !== 1) throw new Error(`expected one calltrace_sdk wheel in ${dist}, found: ${wheels.join(", ") || "none"}`);
      must(venvPython, ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", join(dist, wheels[0])]);
      const out = join(reports, "sdk-python.xml");
      const status = run(venvPython, ["-m", "pytest", "sdk/python", `--junitxml=${out}`, "-q"], {
        env: { CALLTRACE_SDK_FROM: "wheel" },
      });
      return withStatus(junitCounts(out), status);
    },
  },
];

/** A suite whose runner failed without reporting a failed test still counts as one failure. */
function withStatus([passed, failed, skipped], status) {
  return [passed, status !== 0 && failed === 0 ? 1 : failed, skipped];
}

// What the tests run for real; a failed install stops here with its reason, before any suite.
must("bash", [join(root, "scripts/install-test-deps.sh")]);
// The Go tools it installs (grpcurl, mailpit, ferretdb, the protoc plugins) are in GOPATH/bin.
process.env.PATH = `${join(spawnSync("go", ["env", "GOPATH"], { encoding: "utf8" }).stdout.trim(), "bin")}:${process.env.PATH}`;
const only = process.argv.slice(2);
const totals = [0, 0, 0];
const lines = [];
for (const suite of suites) {
  if (only.length > 0 && !only.includes(suite.name)) continue;
  let counts;
  try {
    counts = suite.run();
  } catch (error) {
    console.error(`${suite.name}: ${error.message}`);
    counts = [0, 1, 0];
  }
  counts.forEach((n, i) => {
    totals[i] += n;
  });
  lines.push(`${suite.name}: ${counts[0]} passed, ${counts[1]} failed, ${counts[2]} skipped`);
}
console.log(`\n${lines.join("\n")}`);
console.log(`total: ${totals[0]} passed, ${totals[1]} failed${totals[2] ? `, ${totals[2]} skipped` : ""}`);
process.exitCode = totals[1] > 0 ? 1 : 0;

import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs script without types
import { junitReport, vitestReport, withStatus } from "../../scripts/test-reports.mjs";

// The summary npm test prints last names each failed test from the reports the real runners wrote.
const run = promisify(execFile);
const repoRoot = new URL("../..", import.meta.url).pathname;

/** Runs a test runner on a suite that fails on purpose: it must exit 1, as runners do when a test failed. */
async function runFailing(command: string, args: string[], cwd: string): Promise<void> {
  await expect(run(command, args, { cwd })).rejects.toMatchObject({ code: 1 });
}

describe("test run reports", () => {
  it("names a failed vitest test with its error's first line, and a file that cannot load", async () => {
    const dir = mkdtempSync(join(tmpdir(), "calltrace-reports-"));
    writeFileSync(
      join(dir, "a.test.mjs"),
      'import { expect, test } from "vitest";\ntest("passes", () => expect(1).toBe(1));\ntest("adds up", () => expect(1 + 1).toBe(3));\n',
    );
    writeFileSync(join(dir, "b.test.mjs"), 'import "./missing.mjs";\nimport { test } from "vitest";\ntest("never runs", () => {});\n');
    const out = join(dir, "report.json");
    await runFailing(
      join(repoRoot, "node_modules/.bin/vitest"),
      ["run", "--root", dir, "--reporter=json", `--outputFile.json=${out}`],
      dir,
    );
    const { counts, failures } = vitestReport(out, dir);
    expect(counts).toEqual([1, 2, 0]);
    expect(failures).toEqual([
      "a.test.mjs > adds up: AssertionError: expected 2 to be 3 // Object.is equality",
      expect.stringMatching(/^b\.test\.mjs > \(the file\): .*missing\.mjs/),
    ]);
  });

  it("names a failed pytest test from its JUnit XML, its message decoded", async () => {
    const dir = mkdtempSync(join(tmpdir(), "calltrace-reports-"));
    writeFileSync(
      join(dir, "test_sums.py"),
      'def test_ok():\n    assert 1 == 1\n\ndef test_sum():\n    assert 1 + 1 == 3, "sum <off> by \\"one\\""\n',
    );
    const out = join(dir, "report.xml");
    await runFailing(
      join(repoRoot, ".venv-hardening/bin/python"),
      ["-m", "pytest", "-q", "-p", "no:cacheprovider", `--junitxml=${out}`],
      dir,
    );
    const { counts, failures } = junitReport(out);
    expect(counts).toEqual([1, 1, 0]);
    expect(failures).toEqual(['test_sums > test_sum: AssertionError: sum <off> by "one"']);
  });

  it("counts a runner that exited non-zero without a failed test as one failure, and a missing report as one", () => {
    expect(withStatus({ counts: [3, 0, 0], failures: [] }, 1, "sdk/python")).toEqual({
      counts: [3, 1, 0],
      failures: ["sdk/python: exited 1 with no failed test reported"],
    });
    const missing = join(tmpdir(), "calltrace-no-such-report.json");
    expect(vitestReport(missing, repoRoot)).toEqual({ counts: [0, 1, 0], failures: [`${missing}: no report written`] });
  });
});

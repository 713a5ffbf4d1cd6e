// What a test run's report says: its counts and its failed tests, each named with its error's
// first line, so that the tail of a long CI log says what failed (scripts/test-all.mjs).
import { existsSync, readFileSync } from "node:fs";
import { relative } from "node:path";

/** A failed test's line for the summary: where it is, its name and its error's first line. */
function failureLine(where, name, message) {
  const first = String(message ?? "").split("\n").find((line) => line.trim() !== "") ?? "";
  return `${where} > ${name}${first ? `: ${first.trim().slice(0, 300)}` : ""}`;
}

/** A vitest JSON report: its counts [passed, failed, skipped] and its failed tests (and files that failed to run). */
export function vitestReport(file, root) {
  if (!existsSync(file)) return { counts: [0, 1, 0], failures: [`${file}: no report written`] };
  const report = JSON.parse(readFileSync(file, "utf8"));
  const skipped = report.numPendingTests + report.numTodoTests;
  const failures = report.testResults.flatMap((result) => {
    const where = relative(root, result.name);
    const tests = result.assertionResults.filter((test) => test.status === "failed");
    if (tests.length === 0 && result.status === "failed") return [failureLine(where, "(the file)", result.message)];
    return tests.map((test) => failureLine(where, test.fullName, test.failureMessages?.[0]));
  });
  // Unhandled errors fail a run without failing a test.
  if (!report.success && failures.length === 0) failures.push("errors outside any test: see the log above");
  // A file that fails to load fails no test: it still counts as one failure.
  return { counts: [report.numPassedTests, Math.max(report.numFailedTests, failures.length), skipped], failures };
}

/** An XML attribute's text: its character references and entities decoded. */
function xmlText(value) {
  const entities = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };
  return value.replace(/&(?:#(\d+)|#x([0-9a-f]+)|(\w+));/gi, (whole, dec, hex, name) =>
    dec ? String.fromCodePoint(Number(dec)) : hex ? String.fromCodePoint(Number.parseInt(hex, 16)) : (entities[name] ?? whole),
  );
}

/** A JUnit XML report (pytest): its counts [passed, failed, skipped] and its failed tests. */
export function junitReport(file) {
  if (!existsSync(file)) return { counts: [0, 1, 0], failures: [`${file}: no report written`] };
  const xml = readFileSync(file, "utf8");
  const attr = (name) => Number(new RegExp(`<testsuite[^>]*\\s${name}="(\\d+)"`).exec(xml)?.[1] ?? 0);
  const failed = attr("failures") + attr("errors");
  const skipped = attr("skipped");
  const failures = [...xml.matchAll(/<testcase\s+classname="([^"]*)"\s+name="([^"]*)"[^>]*>\s*<(?:failure|error)\s+message="([^"]*)"/g)].map(
    ([, where, name, message]) => failureLine(where, name, xmlText(message)),
  );
  return { counts: [attr("tests") - failed - skipped, failed, skipped], failures };
}

/** A suite whose runner failed without reporting a failed test still counts as one failure. */
export function withStatus({ counts: [passed, failed, skipped], failures }, status, name) {
  const unreported = status !== 0 && failed === 0;
  return { counts: [passed, unreported ? 1 : failed, skipped], failures: unreported ? [`${name}: exited ${status} with no failed test reported`] : failures };
}

import { defineConfig } from "vitest/config";

/**
 * The service's test tiers, each runnable alone (`npm test -- store`, or `npx vitest run --project
 * store`). A file belongs to the first tier whose patterns match it; every other file is `unit`
 * (fast, in-process service over real sockets). The SDK tier is the SDKs' own suites
 * (scripts/test-all.mjs).
 */
export const tiers = {
  // The store adapters and everything run against FerretDB (or MONGODB_URI's server).
  store: [
    "test/store/**/*.test.ts",
    "test/mongo/**/*.test.ts",
    "test/**/*mongo*.test.ts",
    // Each case on FerretDB too (traces import), or the quota's count rebuilt from MongoDB's traces.
    "test/cli/traces-import.test.ts",
    "test/cli/traces-import-otlp-live.test.ts",
    "test/limits/quota-restart.test.ts",
  ],
  // Debian's chromium driven by playwright-core.
  browser: ["test/**/*browser*.test.ts"],
  // Other programs talking to the service: OpenTelemetry SDKs, generated Go and Python clients, schemathesis.
  interop: ["test/otlp-interop/**/*.test.ts", "test/codegen/**/*.test.ts", "test/hardening/schemathesis.test.ts"],
} as const;

const claimed = Object.values(tiers).flat();

export default defineConfig({
  test: {
    // Tests start real servers and child processes; forks keep native modules and signals apart.
    pool: "forks",
    // The `calltrace` child processes run a build compiled once per run, not tsx (test/support/service-build.ts).
    globalSetup: ["test/support/service-build.ts"],
    // CALLTRACE_TEST_CPU=<file> records each file's wall and CPU time (test/support/cpu-record.ts).
    // file-end-setup.ts stops what a file started from its beforeAll (test/support/file-end.ts).
    setupFiles: ["test/support/cpu-record.ts", "test/support/file-end-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // expect.poll waits on real servers and a real browser; on 2 busy cores 1 s (the default) is too short.
    expect: { poll: { timeout: 10_000 } },
    // One worker process runs every file of a tier, each importing the service's modules (and
    // playwright, the MongoDB driver) once, not once per file: about 1 s of CPU a file
    // (bench/RESULTS.md, "Test suite"). Files keep no state between them: none mocks a module or
    // changes process.env, the one fake clock is restored, and what a file starts (services,
    // FerretDB, chromium) is stopped when it ends (test/support/file-end.ts).
    isolate: false,
    projects: [
      ...Object.entries(tiers).map(([name, include], i) => ({
        extends: true as const,
        // Files matched by an earlier tier stay there.
        test: { name, include: [...include], exclude: Object.values(tiers).slice(0, i).flat() },
      })),
      { extends: true as const, test: { name: "unit", include: ["test/**/*.test.ts"], exclude: claimed } },
    ],
  },
});

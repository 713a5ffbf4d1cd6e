import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // The packed SDK, and the service from this repository compiled once for the end-to-end tests'
    // `calltrace` processes (test/support/calltrace-server.ts).
    globalSetup: ["test/support/build-package.ts", "../../test/support/service-build.ts"],
    // Two shared cores: a few files at a time keeps timing-sensitive tests honest.
    maxWorkers: 2,
    // CI runs this suite beside two service suites on those cores: tests that start Node children
    // took 7-21 s there, so 20 s left too little room.
    testTimeout: 60_000,
  },
});

import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/build-package.ts"],
    // Two shared cores: a few files at a time keeps timing-sensitive tests honest.
    maxWorkers: 2,
    testTimeout: 20_000,
  },
});

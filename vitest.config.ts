import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Tests start real servers and child processes; forks keep native modules and signals apart.
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});

import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Tests start real servers and child processes; forks keep native modules and signals apart.
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // expect.poll waits on real servers and a real browser; on 2 busy cores 1 s (the default) is too short.
    expect: { poll: { timeout: 10_000 } },
  },
});

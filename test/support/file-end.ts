import { afterAll } from "vitest";

/**
 * Clean-ups that run when the current test file ends, registered from anywhere: vitest never runs
 * an afterAll registered inside a beforeAll, where most files start their services. A setup file
 * (vitest.config.ts) runs them after the file's own afterAll hooks. They matter where one worker
 * runs many files (the unit tier, `isolate: false`): a service left running slows every later file.
 */
const pending: (() => Promise<void>)[] = [];

export function atFileEnd(cleanup: () => Promise<void>): void {
  pending.push(cleanup);
}

// A setup file is run again for each test file; this module, imported by the helpers too, once.
export function runAtFileEnd(): void {
  afterAll(async () => {
    for (const cleanup of pending.splice(0).reverse()) await cleanup();
  });
}

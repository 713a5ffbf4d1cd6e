import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, parseCommandArgs, resolveConfig } from "../../src/config/config.js";
import { loadPlans } from "../../src/config/plans.js";
import { tempDir } from "../support/temp-dir.js";

describe("configuration (D21)", () => {
  it("defaults to the embedded mode on 127.0.0.1:8080 with no Redis or MongoDB", () => {
    const config = resolveConfig({}, {});
    expect(config).toMatchObject({ port: 8080, host: "127.0.0.1", dataDir: "./data", trustProxy: false, maxBodyBytes: 65536 });
    expect(config.redisUrl).toBeUndefined();
    expect(config.mongodbUri).toBeUndefined();
  });

  it("a flag wins over its environment variable, which wins over the default", () => {
    expect(resolveConfig({}, { PORT: "9000" }).port).toBe(9000);
    expect(resolveConfig({ port: "9100" }, { PORT: "9000" }).port).toBe(9100);
    expect(resolveConfig({ "trust-proxy": true }, {}).trustProxy).toBe(true);
    expect(resolveConfig({}, { TRUST_PROXY: "yes" }).trustProxy).toBe(true);
  });

  it("a boolean flag turns off with --no-<flag>, over its environment variable", () => {
    const { values } = parseCommandArgs(["--no-trust-proxy"], {});
    expect(resolveConfig(values, { TRUST_PROXY: "true" }).trustProxy).toBe(false);
  });

  it("a malformed value is a clear error naming the variable and the flag", () => {
    expect(() => resolveConfig({}, { MAX_BODY_BYTES: "64k" })).toThrow(new ConfigError('MAX_BODY_BYTES / --max-body-bytes: expected a whole number >= 0, got "64k"'));
    expect(() => resolveConfig({}, { TRUST_PROXY: "maybe" })).toThrow(ConfigError);
  });
});

describe("plans (D19)", () => {
  it("without PLANS_FILE: free 100/minute 50,000/month 10 keys and pro 1,000/minute 500,000/month 100 keys", () => {
    const plans = loadPlans(undefined);
    expect([...plans.values()]).toEqual([
      { name: "free", perMinute: 100, perMonth: 50_000, maxKeys: 10 },
      { name: "pro", perMinute: 1000, perMonth: 500_000, maxKeys: 100 },
    ]);
  });

  it("PLANS_FILE replaces them, and a bad file is refused with the reason", () => {
    const dir = tempDir();
    const good = join(dir, "plans.json");
    const bad = join(dir, "bad.json");
    writeFileSync(good, JSON.stringify({ internal: { per_minute: 1_000_000, per_month: 1_000_000_000 } }));
    expect([...loadPlans(good).keys()]).toEqual(["internal"]);
    // max_keys defaults to 10 for a plan named free and 100 for any other, and the file can set it.
    writeFileSync(good, JSON.stringify({ free: { per_minute: 1, per_month: 1 }, team: { per_minute: 1, per_month: 1 }, big: { per_minute: 1, per_month: 1, max_keys: 3 } }));
    expect([...loadPlans(good).values()].map((p) => p.maxKeys)).toEqual([10, 100, 3]);
    writeFileSync(bad, JSON.stringify({ big: { per_minute: 1, per_month: 1, max_keys: 0 } }));
    expect(() => loadPlans(bad)).toThrow("plan big: max_keys must be a whole number > 0");
    writeFileSync(bad, JSON.stringify({ free: { per_minute: -1, per_month: 10 } }));
    expect(() => loadPlans(bad)).toThrow("plan free needs per_minute and per_month as whole numbers > 0");
    expect(() => loadPlans(join(dir, "missing.json"))).toThrow(ConfigError);
  });
});

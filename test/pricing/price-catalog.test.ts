import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// The price table is generated (scripts/refresh-prices.py, docs/pricing.md) from the pinned
// upstream package in .venv-prices, which `npm test` makes (scripts/install-test-deps.sh).
const root = fileURLToPath(new URL("../..", import.meta.url));
const python = `${root}.venv-prices/bin/python`;

function refresh(...args: string[]): string {
  if (!existsSync(python)) {
    throw new Error(
      "the price catalog test needs .venv-prices with genai-prices; `npm test` makes it, or run: " +
        "python3 -m venv .venv-prices && .venv-prices/bin/pip install -r scripts/prices/requirements.txt",
    );
  }
  const run = spawnSync(python, ["scripts/refresh-prices.py", ...args], { cwd: root, encoding: "utf8" });
  if (run.status !== 0) throw new Error(`refresh-prices.py ${args.join(" ")} exited ${run.status}: ${run.stderr}`);
  return run.stdout;
}

describe("the price table (sdk/pricing/models.json)", () => {
  const table = JSON.parse(readFileSync(`${root}sdk/pricing/models.json`, "utf8"));
  const overlay = JSON.parse(readFileSync(`${root}sdk/pricing/overlay.json`, "utf8"));

  it("is exactly what the refresh script makes from the pinned upstream and our overlay", () => {
    expect(refresh("--stdout")).toBe(readFileSync(`${root}sdk/pricing/models.json`, "utf8"));
    const pinned = /^genai-prices==(\S+)$/m.exec(readFileSync(`${root}scripts/prices/requirements.txt`, "utf8"))?.[1];
    expect(table.upstream).toEqual({ package: "genai-prices", version: pinned, as_of: overlay.as_of });
  });

  it("leaves unpriced only upstream models whose price is not a per-token price of a text call", () => {
    const unpriced: Record<string, Record<string, string>> = JSON.parse(refresh("--unpriced"));
    const notPerToken = /^(output_image_mtok|output_video_mtok|input_image_mtok|input_video_mtok|cache_image_read_mtok|audio_hours|input_mchars|no input price)$/;
    for (const [provider, models] of Object.entries(unpriced)) {
      for (const [model, reason] of Object.entries(models)) expect(reason, `${provider}/${model}`).toMatch(notPerToken);
    }
    // The current flagships of each provider are priced.
    const flagships: [string, string][] = [
      ["openai", "gpt-6-sol"],
      ["openai", "gpt-5.6-sol"],
      ["anthropic", "claude-fable-5-2"],
      ["anthropic", "claude-opus-4-8"],
      ["gemini", "gemini-4-argon"],
      ["gemini", "gemini-3.8-flash"],
    ];
    for (const [provider, model] of flagships) expect(table.models[provider][model], `${provider}/${model}`).toBeDefined();
  });

  it("gives every overlay correction its source and date", () => {
    for (const corrections of Object.values(overlay.corrections) as Record<string, string>[][]) {
      for (const correction of corrections) {
        expect(correction.source).toMatch(/^https:\/\//);
        expect(correction.date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
        expect(correction.reason).toBeTruthy();
      }
    }
  });
});

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Page } from "playwright-core";

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** One axe rule a page breaks, with the elements that break it. */
export interface AxeViolation {
  id: string;
  impact: string;
  help: string;
  targets: string[];
}

/**
 * Runs axe-core (the npm package, in the page's own chromium) on the page as it is now, and
 * answers its serious and critical violations. Injected through the DevTools protocol, which the
 * dashboard's strict Content-Security-Policy does not govern (an inline <script> it would refuse).
 */
export async function seriousAxeViolations(page: Page): Promise<AxeViolation[]> {
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    // biome-ignore lint/suspicious/noExplicitAny: axe is injected above, untyped in the page
    const { violations } = await (window as any).axe.run(document, { resultTypes: ["violations"] });
    return (violations as { id: string; impact: string; help: string; nodes: { target: string[] }[] }[]).map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      targets: v.nodes.slice(0, 5).map((n) => n.target.join(" ")),
    }));
  });
  return violations.filter((v) => v.impact === "serious" || v.impact === "critical");
}

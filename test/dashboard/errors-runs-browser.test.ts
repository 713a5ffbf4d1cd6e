import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seriousAxeViolations } from "../support/axe.js";
import { openDashboardBrowser, projectApp, signUpWithKey, type DashboardBrowser } from "../support/browser.js";
import { postTrace, traceBody } from "../support/test-service.js";

/**
 * The Errors and Runs views (issue #26, D55) in a real browser: what they show for traces sent
 * through the REST API, their links, axe at desktop and phone widths, and the keyboard.
 */
describe("dashboard in a real browser: errors and runs", { timeout: 120_000 }, () => {
  let browser: DashboardBrowser;
  let page: Page;
  let app = "";

  beforeAll(async () => {
    browser = await openDashboardBrowser();
    page = browser.page;
    const key = await signUpWithKey(page, browser.service.url, "errors@example.com", "views");
    app = projectApp(page);
    const traces: Record<string, unknown>[] = [
      // The oldest run: a session id and a user id far longer than a phone is wide.
      {
        session_id: `agent-${"x".repeat(150)}`,
        user_id: `customer-${"y".repeat(150)}`,
        status: "error",
        error: "upstream 502: bad gateway",
      },
      // Three rate limits that differ only in their numbers and request ids, from two users.
      ...[1, 2, 3].map((i) => ({
        status: "error",
        error: `429 Rate limit: ${30_000 + i} tokens per min, request req_${i}XyZaBcDeF`,
        user_id: i === 1 ? "cust-001" : "cust-002",
        session_id: "chat-7",
        latency_ms: 200 * i,
      })),
      { status: "error", error: "model 'o9' not found", provider: "anthropic", model: "claude-sonnet-4", cost_usd: 0 },
      // An agent run of three successful calls in session chat-7, one of them dear.
      { session_id: "chat-7", latency_ms: 1500, cost_usd: 2.5 },
      { session_id: "chat-7", latency_ms: 700 },
      { session_id: "batch-1", latency_ms: 100, cost_usd: 0.001 },
      { latency_ms: 100 },
    ];
    for (const fields of traces) expect((await postTrace(browser.service.url, traceBody(key, fields), { key })).status).toBe(202);
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
  });

  const open = async (path: string, width = 1440) => {
    await page.setViewportSize({ width, height: 900 });
    await page.goto(`${app}${path}`);
    await page.locator("main h1").first().waitFor();
    await page.waitForLoadState("networkidle");
  };

  it("Errors ranks the failures by masked message, with share and the models and users affected, and links to exactly their traces", async () => {
    await open("errors");
    const groups = page.locator("li.error-group");
    await expect.poll(() => groups.count()).toBe(3);
    const top = groups.first();
    expect(await top.locator(".error-message").textContent()).toBe("<num> Rate limit: <num> tokens per min, request <id>");
    const text = (await top.textContent()) ?? "";
    expect(text).toContain("60.0%");
    expect(text).toContain("gpt-4o-2024-08-06 (3)");
    expect(text).toContain("cust-002 (2)");
    expect((await groups.locator(".error-message").allTextContents()).slice(1).sort()).toEqual([
      "model <str> not found",
      "upstream <num>: bad gateway",
    ]);
    expect(await page.locator("[data-error-summary]").textContent()).toContain("5 failed calls in 3 groups");
    // The page's navigation entry.
    expect(await page.locator("nav a[aria-current=page]").textContent()).toBe("Errors");

    await top.getByRole("link", { name: "View the 3 calls" }).click();
    await page.waitForURL(/\/traces\?/);
    const url = new URL(page.url());
    expect(url.searchParams.get("status")).toBe("error");
    expect(url.searchParams.get("error_group")).toMatch(/^[0-9a-f]{16}$/);
    await expect.poll(() => page.locator("table tbody tr").count()).toBe(3);
  });

  it("Runs lists sessions by recency or cost, and a run opens on its own URL with its calls as a waterfall", async () => {
    await open("runs");
    const rows = page.locator("table.runs tbody tr");
    await expect
      .poll(() => rows.evaluateAll((r) => r.map((row) => row.getAttribute("data-run-id"))))
      .toEqual(["session:batch-1", "session:chat-7", `session:agent-${"x".repeat(150)}`]);
    const chat = page.locator('tr[data-run-id="session:chat-7"]');
    expect(await chat.locator("td").allTextContents()).toEqual(expect.arrayContaining(["5", "$2.53", "3"]));
    await page.getByRole("button", { name: "Highest cost" }).click();
    await expect.poll(() => rows.first().getAttribute("data-run-id")).toBe("session:chat-7");
    expect(new URL(page.url()).searchParams.get("sort")).toBe("cost");

    await chat.getByRole("link").click();
    await page.waitForURL(/\/runs\/session%3Achat-7$/);
    await page.locator("ol.waterfall li").first().waitFor();
    expect(await page.locator("main h1").textContent()).toBe("Run: session chat-7");
    expect(await page.locator("ol.waterfall li").count()).toBe(5);
    expect(await page.locator("ol.waterfall li.failed").count()).toBe(3);
    // Bars sit by start: each starts no earlier than the one above it.
    const lefts = await page.locator(".waterfall-bar").evaluateAll((bars) => bars.map((b) => b.getBoundingClientRect().left));
    expect(lefts).toEqual([...lefts].sort((a, b) => a - b));
    // The URL alone opens it again, and its calls link to the trace.
    await page.reload();
    await page.locator("ol.waterfall li").first().waitFor();
    await page.locator("ol.waterfall li a").first().click();
    await page.waitForURL(/\/traces\?.*session=chat-7.*trace=/);
    await page.locator(".trace-detail").waitFor();
  });

  it("an unknown run says so", async () => {
    await open("runs/session%3Anever");
    await expect.poll(() => page.locator("main [role=alert]").textContent()).toContain("no run with id");
  });

  it("accessibility: axe finds no serious or critical violation at 1440 and 390 px, and every group and run is reachable by keyboard", async () => {
    for (const width of [1440, 390]) {
      for (const path of ["errors", "runs", "runs/session%3Achat-7", `runs/session%3Aagent-${"x".repeat(150)}`]) {
        await open(path, width);
        await page.locator("li.error-group, table.runs tbody tr, ol.waterfall li").first().waitFor();
        expect(await seriousAxeViolations(page), `${path} at ${width}`).toEqual([]);
        if (!path.includes("agent")) await browser.shot(`${path.startsWith("runs/") ? "run" : path}${width === 390 ? "-390" : ""}`);
        // Nothing wider than the phone's screen.
        if (width === 390) expect(await page.evaluate(() => document.documentElement.scrollWidth), path).toBeLessThanOrEqual(390);
      }
    }
    await open("errors");
    const focused: string[] = [];
    for (let i = 0; i < 60 && focused.filter((t) => t.startsWith("View the")).length < 2; i++) {
      await page.keyboard.press("Tab");
      focused.push(await page.evaluate(() => document.activeElement?.textContent?.trim() ?? ""));
    }
    expect(focused).toEqual(expect.arrayContaining(["View the 3 calls", "View the 1 call"]));
    await open("runs");
    for (let i = 0; i < 60; i++) {
      await page.keyboard.press("Tab");
      if ((await page.evaluate(() => document.activeElement?.textContent)) === "session chat-7") break;
    }
    await page.keyboard.press("Enter");
    await page.waitForURL(/\/runs\/session%3Achat-7$/);
  });
});

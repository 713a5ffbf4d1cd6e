import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { startServiceProcess, type ServiceProcess } from "./cli.js";
import { atFileEnd } from "./file-end.js";
import { tempDir } from "./temp-dir.js";

/** Debian's chromium, installed by .ci/run; never a downloaded browser. */
export const chromiumPath = "/usr/bin/chromium";

/** A headless chromium with a fresh profile, for the dashboard's browser tests. */
export async function launchBrowser(viewport = { width: 1400, height: 900 }): Promise<BrowserContext> {
  if (!existsSync(chromiumPath)) {
    throw new Error(`${chromiumPath} is missing: the browser tests need Debian's chromium. Install it with: apt-get install -y chromium`);
  }
  const context = await chromium.launchPersistentContext(tempDir("calltrace-chromium-"), {
    executablePath: chromiumPath,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
    acceptDownloads: true,
    viewport,
  });
  // Closed when its file ends should the file not close it (closing twice is a no-op): where a
  // worker runs many files (isolate: false) a browser left open would outlive its file.
  atFileEnd(() => context.close());
  return context;
}

/** Where the README's screenshots are written when CALLTRACE_SCREENSHOTS is set (e.g. to docs). */
const screenshotDir = process.env.CALLTRACE_SCREENSHOTS;

/** A `calltrace serve` process with a fresh store and a browser page to drive its dashboard. */
export interface DashboardBrowser {
  service: ServiceProcess;
  context: BrowserContext;
  page: Page;
  /** Saves a full-page screenshot as docs' `dashboard-<name>.png`, when CALLTRACE_SCREENSHOTS is set. */
  shot(name: string): Promise<void>;
  close(): Promise<void>;
}

export async function openDashboardBrowser(serviceArgs: string[] = []): Promise<DashboardBrowser> {
  const service = await startServiceProcess(["--data-dir", tempDir(), ...serviceArgs]);
  const context = await launchBrowser();
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(20_000);
  return {
    service,
    context,
    page,
    async shot(name) {
      if (!screenshotDir) return;
      mkdirSync(screenshotDir, { recursive: true });
      await page.screenshot({ path: join(screenshotDir, `dashboard-${name}.png`), fullPage: true });
    },
    async close() {
      await context.close();
      service.child.kill("SIGTERM");
      await service.exited;
    },
  };
}

/** Signs up through the page and creates a key under Settings; answers the key's plaintext. */
export async function signUpWithKey(page: Page, url: string, email: string, keyName: string): Promise<string> {
  await page.goto(`${url}/app/`);
  await page.getByRole("button", { name: "Sign up" }).click();
  await page.fill("input[name=email]", email);
  await page.fill("input[name=password]", "correct horse battery");
  await page.getByRole("button", { name: "Create account" }).click();
  await page.waitForURL(projectPage);
  await page.getByRole("link", { name: "Settings · API keys" }).click();
  await page.fill("input[name=key-name]", keyName);
  await page.getByRole("button", { name: "Create key" }).click();
  return page.locator("#new-key").inputValue();
}

/** A project's dashboard pages: /app/p/<projectId>/... */
export const projectPage = /\/app\/p\/[^/]+\//;

/** The root of the pages of the project the page shows, such as `http://127.0.0.1:1234/app/p/<id>/`. */
export function projectApp(page: Page): string {
  const url = new URL(page.url());
  const root = /^\/app\/p\/[^/]+\//.exec(url.pathname)?.[0];
  if (!root) throw new Error(`${page.url()} is no project's page`);
  return url.origin + root;
}

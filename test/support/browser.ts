import { existsSync } from "node:fs";
import { chromium, type BrowserContext } from "playwright-core";
import { tempDir } from "./temp-dir.js";

/** Debian's chromium, installed by .ci/run; never a downloaded browser. */
export const chromiumPath = "/usr/bin/chromium";

/** A headless chromium with a fresh profile, for the dashboard's browser tests. */
export async function launchBrowser(viewport = { width: 1400, height: 900 }): Promise<BrowserContext> {
  if (!existsSync(chromiumPath)) {
    throw new Error(`${chromiumPath} is missing: the browser tests need Debian's chromium. Install it with: apt-get install -y chromium`);
  }
  return chromium.launchPersistentContext(tempDir("calltrace-chromium-"), {
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
}

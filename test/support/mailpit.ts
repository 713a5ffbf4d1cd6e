import { spawn } from "node:child_process";
import { join } from "node:path";
import { freePort } from "./free-port.js";
import { goTool } from "./go-tools.js";
import { tempDir } from "./temp-dir.js";

/** A message as Mailpit's HTTP API lists it. */
export interface MailpitMessage {
  ID: string;
  Subject: string;
  To: { Address: string }[];
  From: { Address: string; Name: string };
}

export interface Mailpit {
  /** What SMTP_URL is set to. */
  smtpUrl: string;
  /** Every message received, newest first. */
  messages(): Promise<MailpitMessage[]>;
  /** A message's plain-text body. */
  text(id: string): Promise<string>;
  close(): void;
}

/** A real Mailpit (SMTP + HTTP API) on free loopback ports; fails with the install command when it is missing. */
export async function startMailpit(): Promise<Mailpit> {
  const [smtp, http] = [await freePort(), await freePort()];
  const child = spawn(
    goTool("mailpit"),
    [
      "--smtp",
      `127.0.0.1:${smtp}`,
      "--listen",
      `127.0.0.1:${http}`,
      "--database",
      join(tempDir(), "mailpit.db"),
      "--quiet",
      "--disable-version-check",
      "--smtp-disable-rdns",
    ],
    { stdio: ["ignore", "ignore", "inherit"] },
  );
  const stop = () => child.kill("SIGKILL");
  process.once("exit", stop);
  const api = `http://127.0.0.1:${http}/api/v1`;
  const get = async (path: string) => {
    const res = await fetch(`${api}${path}`);
    if (!res.ok) throw new Error(`Mailpit ${path} answered ${res.status}`);
    return res.json() as Promise<Record<string, unknown>>;
  };
  for (let attempt = 0; ; attempt++) {
    if (child.exitCode !== null) throw new Error(`mailpit exited with ${child.exitCode}`);
    try {
      await get("/messages");
      break;
    } catch (error) {
      if (attempt > 100) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return {
    smtpUrl: `smtp://127.0.0.1:${smtp}`,
    messages: async () => (await get("/messages")).messages as MailpitMessage[],
    text: async (id) => (await get(`/message/${id}`)).Text as string,
    close: stop,
  };
}

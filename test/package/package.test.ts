import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PackedInstall, packAndInstall, quietNpmEnv as quietNpm } from "../support/packed-install.js";
import { tempDir } from "../support/temp-dir.js";
import { traceBody } from "../support/test-service.js";

let installed: PackedInstall;
let app: string;
let server: ChildProcess | undefined;

beforeAll(() => {
  installed = packAndInstall();
  app = installed.app;
}, 600_000);

afterAll(() => {
  if (server?.pid && server.exitCode === null) process.kill(-server.pid, "SIGKILL");
  installed?.remove();
});

function npx(args: string[], env: NodeJS.ProcessEnv): string {
  return execFileSync("npx", ["--no-install", "calltrace", ...args], { cwd: app, env: { ...quietNpm, ...env }, encoding: "utf8" }).trim();
}

describe("the service as a package (npm pack, then npm install in an empty directory)", () => {
  it("ships compiled JavaScript, generated code and the built dashboard, and no TypeScript", () => {
    const pkg = join(app, "node_modules/calltrace");
    expect(existsSync(join(pkg, "dist/src/cli/main.js"))).toBe(true);
    expect(existsSync(join(pkg, "dist/gen/calltrace/v1/trace_service_pb.js"))).toBe(true);
    expect(existsSync(join(pkg, "web/dist/index.html"))).toBe(true);
    expect(existsSync(join(pkg, "src"))).toBe(false);
    for (const devOnly of ["tsx", "typescript", "vite", "vitest", "esbuild"]) expect(existsSync(join(app, "node_modules", devOnly))).toBe(false);
  });

  it("npx calltrace serve starts, npx calltrace keys create makes a key, and a trace sent to it is stored", async () => {
    const dataDir = tempDir();
    // The test sends one trace and does not retry: a commit may take long on a loaded machine.
    const env = { DATA_DIR: dataDir, PORT: "0", LOG_LEVEL: "info", WRITE_TIMEOUT_MS: "60000" };
    server = spawn("npx", ["--no-install", "calltrace", "serve"], { cwd: app, env: { ...quietNpm, ...env }, detached: true, stdio: ["ignore", "pipe", "inherit"] });
    const url = await new Promise<string>((resolve, reject) => {
      let seen = "";
      server!.stdout!.on("data", (chunk: Buffer) => {
        seen += chunk.toString();
        const match = /"url":"(http:\/\/[^"]+)".*"msg":"listening"/.exec(seen);
        if (match) resolve(match[1]!);
      });
      server!.on("exit", (code) => reject(new Error(`calltrace serve exited ${code}: ${seen}`)));
    });
    const key = npx(["keys", "create", "--plan", "free", "--name", "package test"], { DATA_DIR: dataDir });
    expect(key).toMatch(/^ct_[A-Za-z0-9]{32,}$/);
    const response = await fetch(`${url}/v1/traces`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(traceBody(key)),
    });
    expect(response.status).toBe(202);
    expect((await fetch(`${url}/app/`)).status).toBe(200);
    const exported = npx(["traces", "export"], { DATA_DIR: dataDir });
    expect(exported.split("\n").map((line) => JSON.parse(line).model)).toEqual(["gpt-4o-2024-08-06"]);
    const stopped = new Promise((resolve) => server!.once("exit", resolve));
    process.kill(-server.pid!, "SIGTERM");
    await stopped;
  });
});

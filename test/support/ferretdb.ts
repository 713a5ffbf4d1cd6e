import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { freePort } from "./free-port.js";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createConnection } from "node:net";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { atFileEnd } from "./file-end.js";

/** How to get the test server when it is missing. */
export const ferretdbInstall =
  "bash scripts/install-ferretdb.sh   (builds github.com/FerretDB/FerretDB/cmd/ferretdb@v1.24.2 into $(go env GOPATH)/bin)";

/** A MongoDB-compatible server for tests: FerretDB started here, or the server of MONGODB_URI. */
export interface MongoTestServer {
  /** A URI naming a database no other test uses. */
  freshUri(): string;
  /** True when this helper runs the server, so it can stop, kill, pause and restart it. */
  readonly managed: boolean;
  /** SIGKILL (an outage); start() brings it back on the same port with the same data. */
  kill(): Promise<void>;
  start(): Promise<void>;
  /** SIGSTOP / SIGCONT: a server that takes connections and writes but never answers. */
  pause(): void;
  resume(): void;
  close(): Promise<void>;
}

/** Sets the database of a mongodb:// URI. */
export function withDatabase(uri: string, database: string): string {
  const match = /^(mongodb(?:\+srv)?:\/\/[^/?]*)(?:\/[^?]*)?(\?.*)?$/.exec(uri);
  if (!match) throw new Error(`not a MongoDB URI: ${uri}`);
  return `${match[1]}/${database}${match[2] ?? ""}`;
}

/**
 * Under vitest, FerretDB's garbage collector is made lazier than Go's default (GOGC=100): its
 * SQLite backend decodes every document of a collection for each $group, and collecting after
 * each few scans was a fifth of its CPU in the attribution contract (bench/RESULTS.md, "Test
 * suite"). GOMEMLIMIT caps the heap that lets grow; GOGC and GOMEMLIMIT in the environment win.
 * The benches (bench/) measure FerretDB as it ships.
 */
const ferretdbGc = process.env.VITEST ? { GOGC: process.env.GOGC ?? "400", GOMEMLIMIT: process.env.GOMEMLIMIT ?? "512MiB" } : {};

function ferretdbBinary(): string | undefined {
  if (process.env.FERRETDB_BIN) return process.env.FERRETDB_BIN;
  const onPath = spawnSync("sh", ["-c", "command -v ferretdb"], { encoding: "utf8" }).stdout.trim();
  if (onPath) return onPath;
  const gopath = spawnSync("go", ["env", "GOPATH"], { encoding: "utf8" }).stdout?.trim() || join(homedir(), "go");
  const candidate = join(gopath, "bin", "ferretdb");
  return existsSync(candidate) ? candidate : undefined;
}

async function waitForPort(port: number, deadlineMs: number, child: ChildProcess): Promise<void> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`ferretdb exited with ${child.exitCode} before listening`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ port, host: "127.0.0.1" }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (open) return;
    if (Date.now() > until) throw new Error(`ferretdb did not listen on 127.0.0.1:${port} within ${deadlineMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * The server the MongoDB tests run against. With MONGODB_URI set (a real MongoDB 6+, say) that
 * server, unless `managed` is asked for: tests that stop or freeze the server need one of their
 * own. Otherwise FerretDB 1.24 with its SQLite backend on a free loopback port and a temporary
 * directory. A missing ferretdb binary fails the test with the install command: never a skip.
 */
export async function startMongoTestServer(options: { managed?: boolean } = {}): Promise<MongoTestServer> {
  const prefix = `calltrace_test_${randomBytes(4).toString("hex")}`;
  let databases = 0;
  const external = process.env.MONGODB_URI;
  if (external && !options.managed) {
    const refuse = () => {
      throw new Error("this server is MONGODB_URI's; tests that stop it need the managed FerretDB");
    };
    return {
      managed: false,
      freshUri: () => withDatabase(external, `${prefix}_${++databases}`),
      kill: async () => refuse(),
      start: async () => refuse(),
      pause: refuse,
      resume: refuse,
      close: async () => {},
    };
  }

  const binary = ferretdbBinary();
  if (!binary)
    throw new Error(
      `FerretDB is not installed, and the MongoDB store tests need it. Install it with:\n  ${ferretdbInstall}\nor set MONGODB_URI to a MongoDB 6+ server (docs/mongodb.md).`,
    );
  const dir = mkdtempSync(join(tmpdir(), "calltrace-ferretdb-"));
  const port = await freePort();
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  const start = async () => {
    const proc = spawn(
      binary,
      [
        "--handler=sqlite",
        `--sqlite-url=file:${dir}/`,
        `--listen-addr=127.0.0.1:${port}`,
        `--state-dir=${dir}`,
        "--telemetry=disable",
        "--debug-addr=-",
        "--log-level=ERROR",
      ],
      { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, ...ferretdbGc } },
    );
    let stderr = "";
    proc.stderr!.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
    exited = new Promise((resolve) => proc.once("exit", () => resolve()));
    child = proc;
    // Should the test process die first, the server must not outlive it.
    const reap = () => proc.kill("SIGKILL");
    process.once("exit", reap);
    proc.once("exit", () => process.off("exit", reap));
    try {
      await waitForPort(port, 15_000, proc);
    } catch (error) {
      throw new Error(`${(error as Error).message}\n${stderr}`);
    }
  };
  const kill = async () => {
    child?.kill("SIGCONT");
    child?.kill("SIGKILL");
    await exited;
    child = undefined;
  };
  const close = async () => {
    await kill();
    rmSync(dir, { recursive: true, force: true });
  };
  await start();
  // Stopped when its file ends should the file not close it: where a worker runs many files
  // (vitest.config.ts, isolate: false) a server left running would outlive its file.
  atFileEnd(close);

  return {
    managed: true,
    freshUri: () => `mongodb://127.0.0.1:${port}/${prefix}_${++databases}`,
    kill,
    start,
    pause: () => child?.kill("SIGSTOP"),
    resume: () => child?.kill("SIGCONT"),
    close,
  };
}

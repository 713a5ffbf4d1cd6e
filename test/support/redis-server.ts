import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { freePort } from "./free-port.js";
import { Redis } from "ioredis";

export const redisInstall = "apt-get install -y redis-server";

/** A real redis-server on a free loopback port, for the limiter tests. Fails loudly when redis-server is missing. */
export interface RedisTestServer {
  url: string;
  port: number;
  /** The running server's process id. */
  readonly pid: number | undefined;
  /** SIGKILL: Redis vanishes mid-run. */
  kill(): Promise<void>;
  /** Starts it again on the same port (empty: it keeps nothing on disk). */
  start(): Promise<void>;
  client(): Redis;
  close(): Promise<void>;
}

export async function startRedis(): Promise<RedisTestServer> {
  if (spawnSync("sh", ["-c", "command -v redis-server"]).status !== 0) {
    throw new Error(`redis-server is not installed; install it with: ${redisInstall}`);
  }
  const port = await freePort();
  let child: ChildProcess | undefined;
  const clients: Redis[] = [];
  const start = async () => {
    child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdio: "ignore" });
    const killOnExit = () => child?.kill("SIGKILL");
    process.once("exit", killOnExit);
    const probe = new Redis({ port, host: "127.0.0.1", lazyConnect: true, retryStrategy: () => null });
    probe.on("error", () => {}); // refused until the server is up: connect() reports it
    for (let attempt = 0; ; attempt++) {
      try {
        await probe.connect();
        await probe.ping();
        break;
      } catch (error) {
        if (attempt > 100) throw error;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    probe.disconnect();
  };
  const kill = async () => {
    const running = child;
    // Killed before (by a signal: no exit code), it will not exit again.
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise((r) => running.once("exit", r));
    running.kill("SIGKILL");
    await exited;
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    get pid() {
      return child?.pid;
    },
    kill,
    start,
    client() {
      const client = new Redis({ port, host: "127.0.0.1" });
      client.on("error", () => {}); // the tests kill Redis on purpose
      clients.push(client);
      return client;
    },
    async close() {
      for (const c of clients) c.disconnect();
      await kill();
    },
  };
}

import { afterAll, beforeAll } from "vitest";
import { runCli, startServiceProcess, type ServiceProcess } from "./cli.js";
import { type MongoTestServer, startMongoTestServer } from "./ferretdb.js";
import { type RedisTestServer, startRedis } from "./redis-server.js";
import { tempDir } from "./temp-dir.js";
import { startWebhookReceiver, type WebhookReceiver } from "./webhook-receiver.js";

/** Service instances on one MongoDB database and one Redis, and a webhook receiver for their alerts. */
export interface ScaleOutCluster {
  /** The shared database's URI. */
  uri: string;
  receiver: WebhookReceiver;
  /** The instances started so far. */
  instances: ServiceProcess[];
  /** Runs the CLI against the shared database and Redis, as an operator would; answers its output. */
  cli(args: string[]): string;
  /** Starts `count` more instances with the environment `env`. */
  start(count: number, env: NodeJS.ProcessEnv): Promise<void>;
}

/**
 * Registers, in the calling describe block, a cluster as docs/scale-out.md runs one: FerretDB (or
 * MONGODB_URI's server) and Redis started before its tests, every instance a process with a data
 * directory of its own (the key sealing alert secrets comes from the shared database), everything
 * stopped after them. Read the answer's fields inside the tests: they are set in beforeAll.
 */
export function useScaleOutCluster(): ScaleOutCluster {
  let mongo: MongoTestServer | undefined;
  let redis: RedisTestServer | undefined;
  const cluster = { instances: [] as ServiceProcess[] } as ScaleOutCluster;
  const shared = () => ["--mongodb-uri", cluster.uri, "--redis-url", redis!.url];

  beforeAll(async () => {
    mongo = await startMongoTestServer();
    redis = await startRedis();
    cluster.uri = mongo.freshUri();
    cluster.receiver = await startWebhookReceiver();
    const cliDir = tempDir();
    cluster.cli = (args) => runCli([...args, ...shared(), "--data-dir", cliDir]);
    cluster.start = async (count, env) => {
      for (let i = 0; i < count; i++) cluster.instances.push(await startServiceProcess([...shared(), "--data-dir", tempDir()], env));
    };
  });
  afterAll(async () => {
    for (const instance of cluster.instances) {
      instance.child.kill("SIGTERM");
      await instance.exited;
    }
    await cluster.receiver?.close();
    await redis?.close();
    await mongo?.close();
  });
  return cluster;
}

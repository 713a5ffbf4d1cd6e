import { setTimeout as delay } from "node:timers/promises";
import { Code, type ConnectRouter, ConnectError } from "@connectrpc/connect";
import { Health, HealthCheckResponse_ServingStatus as Serving } from "../../gen/grpc/health/v1/health_pb.js";

export interface HealthOptions {
  /** Resolves when the service can take traces (the stores answer), as GET /readyz. */
  ready: () => Promise<unknown>;
  /** How often a Watch looks again, in ms. */
  watchIntervalMs?: number;
}

/**
 * grpc.health.v1.Health, the gRPC twin of GET /readyz: the whole server ("") and each service on
 * the router are SERVING while the stores answer, NOT_SERVING otherwise. Load balancers and
 * Kubernetes' gRPC probes ask it.
 */
export function serveHealth(router: ConnectRouter, { ready, watchIntervalMs = 1000 }: HealthOptions): void {
  const known = (service: string) => service === "" || router.handlers.some((h) => h.service.typeName === service);
  const status = () =>
    ready().then(
      () => Serving.SERVING,
      () => Serving.NOT_SERVING,
    );

  router.service(Health, {
    async check({ service }) {
      if (!known(service)) throw new ConnectError(`unknown service ${service}`, Code.NotFound);
      return { status: await status() };
    },
    async list() {
      const now = await status();
      const names = ["", ...new Set(router.handlers.map((h) => h.service.typeName))];
      return { statuses: Object.fromEntries(names.map((name) => [name, { status: now }])) };
    },
    async *watch({ service }, context) {
      let last: Serving | undefined;
      while (!context.signal.aborted) {
        const now = known(service) ? await status() : Serving.SERVICE_UNKNOWN;
        if (now !== last) yield { status: now };
        last = now;
        await delay(watchIntervalMs, undefined, { signal: context.signal }).catch(() => {});
      }
    },
  });
}

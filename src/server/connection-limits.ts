import type { Config } from "../config/config.js";
import type { ConnectionLimits } from "./listen.js";

/** The listener's timeouts and bounds, from the configuration. */
export function connectionLimits(config: Config): ConnectionLimits {
  return {
    headersTimeoutMs: config.headersTimeoutMs,
    requestTimeoutMs: config.requestTimeoutMs,
    keepAliveTimeoutMs: config.keepAliveTimeoutMs,
    h2IdleTimeoutMs: config.h2IdleTimeoutMs,
    h2MaxConcurrentStreams: config.h2MaxConcurrentStreams,
    maxConnections: config.maxConnections,
  };
}

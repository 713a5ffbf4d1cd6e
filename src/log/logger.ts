import { pino, type Logger } from "pino";

export type { Logger };

/** JSON lines on stdout; never given keys or trace bodies. */
export function createLogger(level: string): Logger {
  return pino({ level, base: { service: "calltrace" } });
}

import { pino, type Logger } from "pino";

export type { Logger };

/** JSON lines on stdout; never given keys or trace bodies. The pid tells `serve --workers N`'s processes apart. */
export function createLogger(level: string): Logger {
  return pino({ level, base: { service: "calltrace", pid: process.pid } });
}

import type { Config } from "../../src/config/config.js";

type Switches = Partial<Pick<Config, "directUnary" | "otlpReader">>;

/**
 * The hand-written fast paths' switches (issue #27): the suites that reach a fast path run once
 * with it on (the default) and once with it off, so that any difference between the two fails.
 */
export const fastPathsOn: [string, Switches] = ["fast paths on", {}];
export const directUnaryOff: [string, Switches] = ["DIRECT_UNARY=false", { directUnary: false }];
export const otlpReaderOff: [string, Switches] = ["OTLP_READER=false", { otlpReader: false }];

// Type-checked as a CommonJS consumer of the built package (module-formats.test.ts).
import { init, stats, unpatch } from "calltrace-sdk";

void init({ apiKey: "ct_x", onWarning: (message: string) => message.length });
export const instrumented: string[] = stats().instrumented;
unpatch();

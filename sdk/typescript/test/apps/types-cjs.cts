// Type-checked as a CommonJS consumer of the built package (module-formats.test.ts).
import { init, stats, unpatch } from "calltrace-sdk";

void init({ apiKey: "ct_x", onWarning: (message: string) => console.warn(message) });
const instrumented: string[] = stats().instrumented;
unpatch();
console.log(instrumented);

// Type-checked as an ESM consumer of the built package (module-formats.test.ts).
import { flush, type InitOptions, init, shutdown, stats, type Trace } from "calltrace-sdk";

const options: InitOptions = { apiKey: "ct_x", prices: { openai: { "my-model": { input: 1, output: 2 } } } };
await init(options);
export const delivered: boolean = await flush(1_000);
export const sent: number = stats().sent;
export const trace: Trace | undefined = undefined;
await shutdown();

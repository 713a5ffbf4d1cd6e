// Type-checked as an ESM consumer of the built package (module-formats.test.ts).
import { flush, type InitOptions, init, shutdown, stats, type Trace } from "calltrace-sdk";

const options: InitOptions = { apiKey: "ct_x", prices: { openai: { "my-model": { input: 1, output: 2 } } } };
await init(options);
const delivered: boolean = await flush(1_000);
const trace: Trace | undefined = undefined;
console.log(stats().sent, delivered, trace);
await shutdown();

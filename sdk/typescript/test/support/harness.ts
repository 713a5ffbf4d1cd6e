import { flush, init, shutdown, type InitOptions } from "../../src/index.js";
import { clientsFor } from "./clients.js";
import { FakeCalltrace } from "./fake-calltrace.js";
import { FakeProvider } from "./fake-provider.js";

export const TEST_KEY = "ct_test0123456789abcdefghijklmnopqrstuv";

export interface Harness {
  provider: FakeProvider;
  service: FakeCalltrace;
  warnings: string[];
  /** Flushes the SDK and returns the trace bodies received since the last call. */
  traces(): Promise<Array<Record<string, any>>>;
  close(): Promise<void>;
}

/** A fake provider, a fake calltrace service, and the SDK initialised against it. */
export async function startHarness(options: InitOptions = {}): Promise<Harness> {
  const provider = await FakeProvider.start();
  const service = await FakeCalltrace.start();
  const warnings: string[] = [];
  await init({
    apiKey: TEST_KEY,
    endpoint: service.endpoint,
    onWarning: (message) => warnings.push(message),
    retryBaseDelayMs: 10,
    ...options,
  });
  return {
    provider,
    service,
    warnings,
    async traces() {
      await flush(5_000);
      return service.received.splice(0).map((received) => received.body);
    },
    async close() {
      await shutdown(1_000);
      await provider.close();
      await service.close();
    },
  };
}

/** A fake provider and a fake calltrace service, for tests that call init() themselves. */
export async function startFakes() {
  const provider = await FakeProvider.start();
  const service = await FakeCalltrace.start();
  return {
    provider,
    service,
    client: clientsFor(provider.url).openai,
    async close() {
      await provider.close();
      await service.close();
    },
  };
}

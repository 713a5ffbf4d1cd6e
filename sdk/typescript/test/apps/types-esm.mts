// Type-checked as an ESM consumer of the built package (module-formats.test.ts).
import {
  flush,
  type InitOptions,
  init,
  shutdown,
  stats,
  type Trace,
  type TraceAttributes,
  untraced,
  withAttributes,
  withCallAttributes,
} from "calltrace-sdk";
import OpenAI from "openai";

const options: InitOptions = {
  apiKey: "ct_x",
  prices: { openai: { "my-model": { input: 1, output: 2 } } },
  environment: "staging",
  tags: ["web"],
  metadata: { team: "search" },
  sampleRate: 0.5,
  enabled: true,
};
await init(options);
export const delivered: boolean = await flush(1_000);
export const sent: number = stats().sent;
export const trace: Trace | undefined = undefined;
const attributes: TraceAttributes = { userId: "u_1", sessionId: "s_1", tags: ["chat"], metadata: { step: "1" } };
// The request keeps its provider type through withCallAttributes(): the result is a ChatCompletion.
const client = new OpenAI({ apiKey: "sk-fake", baseURL: "http://127.0.0.1:1/v1", maxRetries: 0 });
export const completion: Promise<OpenAI.Chat.ChatCompletion> = withAttributes(attributes, () =>
  client.chat.completions.create(
    withCallAttributes({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] }, { tags: ["one-call"] }),
  ),
);
completion.catch(() => {});
export const answer: number = untraced(() => 42);
await shutdown();

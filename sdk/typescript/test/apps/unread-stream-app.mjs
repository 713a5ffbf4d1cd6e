// Streams that are created (billed) but never read; no flush, no shutdown.
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { init } from "calltrace-sdk";

await init();
const base = process.env.PROVIDER_URL;
const messages = [{ role: "user", content: "hi" }];
globalThis.kept = [
  await new OpenAI({ apiKey: "sk-fake", baseURL: `${base}/v1` }).chat.completions.create({
    model: "gpt-4o",
    messages,
    stream: true,
    stream_options: { include_usage: true },
  }),
];
globalThis.kept.push(
  await new Anthropic({ apiKey: "sk-fake", baseURL: base }).messages.create({
    model: "claude-haiku-4-5",
    max_tokens: 8,
    messages,
    stream: true,
  }),
);

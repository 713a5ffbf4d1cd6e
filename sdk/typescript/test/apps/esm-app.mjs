// An ESM application: static imports, then init().
import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import OpenAI from "openai";
import { init, stats } from "calltrace-sdk";

// The exit-flush tests time the SDK's wait from the process's own exit event: the parent notices the
// exit later on a loaded machine, and that delay is not the SDK's.
if (process.env.REPORT_EXIT_AT) process.on("exit", () => console.log(JSON.stringify({ exitAt: Date.now() })));
await init({ exitFlushTimeoutMs: Number(process.env.EXIT_FLUSH_MS) || undefined });
const base = process.env.PROVIDER_URL;
const messages = [{ role: "user", content: "hi" }];
await new OpenAI({ apiKey: "sk-fake", baseURL: `${base}/v1` }).chat.completions.create({ model: "gpt-4o", messages });
await new Anthropic({ apiKey: "sk-fake", baseURL: base }).messages.create({
  model: "claude-haiku-4-5",
  max_tokens: 8,
  messages,
});
await new GoogleGenAI({ apiKey: "fake", httpOptions: { baseUrl: base } }).models.generateContent({
  model: "gemini-2.0-flash",
  contents: "hi",
});
console.log(JSON.stringify({ instrumented: stats().instrumented, doneAt: Date.now() }));

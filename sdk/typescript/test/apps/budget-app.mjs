// An application with enforceBudget on (ENFORCE_BUDGET=1) or off, driven line by line: each stdin line is
// a JSON call ({ provider, userId, stream }), answered on stdout with
// { ok: true } or { refused: { ...the BudgetExceeded } } or { error }.
import { createInterface } from "node:readline";
import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import OpenAI from "openai";
import { BudgetExceeded, flush, init, withAttributes } from "calltrace-sdk";

await init({
  enforceBudget: process.env.ENFORCE_BUDGET === "1",
  budgetRefreshMs: Number(process.env.BUDGET_REFRESH_MS),
  onWarning: (message) => console.error(message),
  retryBaseDelayMs: 50,
  maxAttempts: 40,
});
const base = process.env.PROVIDER_URL;
const messages = [{ role: "user", content: "hi" }];
const openai = new OpenAI({ apiKey: "sk-fake", baseURL: `${base}/v1`, maxRetries: 0 });
const anthropic = new Anthropic({ apiKey: "sk-fake", baseURL: base, maxRetries: 0 });
const gemini = new GoogleGenAI({ apiKey: "fake", httpOptions: { baseUrl: base } });

const drain = async (stream) => {
  for await (const _ of stream);
};
const calls = {
  openai: (stream) =>
    openai.chat.completions.create({ model: "gpt-4o", messages, stream }).then((r) => stream && drain(r)),
  anthropic: (stream) =>
    anthropic.messages
      .create({ model: "claude-opus-4-5", max_tokens: 8, messages, stream })
      .then((r) => stream && drain(r)),
  gemini: (stream) =>
    stream
      ? gemini.models.generateContentStream({ model: "gemini-2.5-pro", contents: "hi" }).then(drain)
      : gemini.models.generateContent({ model: "gemini-2.5-pro", contents: "hi" }),
};

for await (const line of createInterface({ input: process.stdin })) {
  const { provider, userId, stream = false } = JSON.parse(line);
  let answer;
  try {
    await withAttributes({ userId }, () => calls[provider](stream));
    // Each trace delivered before answering: the service has it when the test asks.
    await flush(30_000);
    answer = { ok: true };
  } catch (error) {
    answer =
      error instanceof BudgetExceeded
        ? { refused: { ...error, message: error.message } }
        : { error: String(error?.message ?? error) };
  }
  console.log(JSON.stringify(answer));
}

// A CommonJS application: require() everywhere, init() before the providers load.
const { init, stats } = require("calltrace-sdk");
init({ exitFlushTimeoutMs: Number(process.env.EXIT_FLUSH_MS) || undefined });
const OpenAI = require("openai");
const Anthropic = require("@anthropic-ai/sdk");
const { GoogleGenAI } = require("@google/genai");

const base = process.env.PROVIDER_URL;
const messages = [{ role: "user", content: "hi" }];
(async () => {
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
  // No flush, no shutdown: pending traces are delivered as the process exits.
})();

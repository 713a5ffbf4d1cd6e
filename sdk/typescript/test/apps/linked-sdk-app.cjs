// The SDK linked from a folder with its own openai; the application has another.
const { init, flush, stats } = require("calltrace-sdk");
init({ onWarning: (message) => console.error(message) });
const OpenAI = require("openai");

(async () => {
  const openai = new OpenAI({ apiKey: "sk-fake", baseURL: `${process.env.PROVIDER_URL}/v1` });
  await openai.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] });
  await flush();
  console.log(JSON.stringify({ instrumented: stats().instrumented }));
})();

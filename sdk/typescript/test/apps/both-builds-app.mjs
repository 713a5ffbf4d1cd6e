// Both builds of this SDK in one process, both initialised: each call must
// still be traced once.
import { createRequire } from "node:module";
import OpenAI from "openai";
import * as esm from "calltrace-sdk";

const cjs = createRequire(import.meta.url)("calltrace-sdk");
await esm.init();
await cjs.init();
const openai = new OpenAI({ apiKey: "sk-fake", baseURL: `${process.env.PROVIDER_URL}/v1` });
await openai.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] });
await Promise.all([esm.flush(), cjs.flush()]);
console.log(JSON.stringify({ esm: esm.stats().instrumented, cjs: cjs.stats().instrumented }));

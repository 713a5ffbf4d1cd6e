import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import OpenAI, { AzureOpenAI } from "openai";

/** One client of each provider library, pointed at the fake provider at `url`, without retries. */
export function clientsFor(url: string) {
  return {
    openai: new OpenAI({ apiKey: "sk-fake", baseURL: `${url}/v1`, maxRetries: 0 }),
    anthropic: new Anthropic({ apiKey: "sk-ant-fake", baseURL: url, maxRetries: 0 }),
    gemini: new GoogleGenAI({ apiKey: "gemini-fake", httpOptions: { baseUrl: url } }),
  };
}

/** An Azure OpenAI client with deployment `my-gpt-4o`, pointed at the fake provider at `url`. */
export function azureClientFor(url: string): AzureOpenAI {
  return new AzureOpenAI({
    apiKey: "azure-fake",
    endpoint: url,
    apiVersion: "2024-10-21",
    deployment: "my-gpt-4o",
    maxRetries: 0,
  });
}

type CalltraceProvider = "openai" | "anthropic" | "gemini";

/**
 * The calltrace provider of a GenAI span's `gen_ai.provider.name` (or the older `gen_ai.system`),
 * case-insensitively: the semantic conventions' names and the ones instrumentations use in practice.
 */
const providers = new Map<string, CalltraceProvider>([
  ["openai", "openai"],
  ["azure.ai.openai", "openai"],
  ["az.ai.openai", "openai"],
  ["anthropic", "anthropic"],
  ["gemini", "gemini"],
  ["gcp.gemini", "gemini"],
  ["gcp.vertex_ai", "gemini"],
  ["gcp.gen_ai", "gemini"],
  ["vertex_ai", "gemini"],
  // The Vercel AI SDK's (below) that no prefix covers.
  ["azure.chat", "openai"],
  ["azure.responses", "openai"],
  ["azure.completion", "openai"],
  ["azure.embeddings", "openai"],
  ["google.generative-ai", "gemini"],
]);

/**
 * The Vercel AI SDK names a provider `<package>.<api>`: `openai.chat`, `openai.responses`,
 * `azure.chat`, `anthropic.messages`, `vertex.anthropic.messages` (Claude on Vertex),
 * `google.generative-ai`, `google.vertex.chat`. Only these packages' own models count: Azure's
 * DeepSeek (`azure.deepseek`) and Vertex's model garden (`vertex.maas`, `vertex.xai`) are not.
 */
const aiSdkPrefixes: [string, CalltraceProvider][] = [
  ["openai.", "openai"],
  ["anthropic.", "anthropic"],
  ["vertex.anthropic.", "anthropic"],
  ["google.vertex.", "gemini"],
];

/** undefined for a provider calltrace does not price or store. */
export function calltraceProvider(name: string): CalltraceProvider | undefined {
  const lower = name.toLowerCase();
  const known = providers.get(lower);
  if (known !== undefined) return known;
  return aiSdkPrefixes.find(([prefix]) => lower.startsWith(prefix))?.[1];
}

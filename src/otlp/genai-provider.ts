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
]);

/**
 * The Vercel AI SDK names a provider `<package>.<api>` (`openai.chat`, `openai.responses`,
 * `azure.chat`, `anthropic.messages`, `google.generative-ai`, `google.vertex.chat`,
 * `vertex.anthropic.messages`): the longest known prefix decides, so Claude on Vertex is anthropic.
 */
const aiSdkPrefixes: [string, CalltraceProvider][] = [
  ["google.vertex.anthropic", "anthropic"],
  ["vertex.anthropic", "anthropic"],
  ["google.generative-ai", "gemini"],
  ["google.vertex", "gemini"],
  ["vertex", "gemini"],
  ["openai", "openai"],
  ["azure", "openai"],
  ["anthropic", "anthropic"],
];

/** undefined for a provider calltrace does not price or store. */
export function calltraceProvider(name: string): CalltraceProvider | undefined {
  const lower = name.toLowerCase();
  const known = providers.get(lower);
  if (known !== undefined) return known;
  for (const [prefix, provider] of aiSdkPrefixes) if (lower === prefix || lower.startsWith(`${prefix}.`)) return provider;
  return undefined;
}

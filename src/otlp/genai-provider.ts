/**
 * The calltrace provider of a GenAI span's `gen_ai.provider.name` (or the older `gen_ai.system`),
 * case-insensitively: the semantic conventions' names and the ones instrumentations use in practice.
 */
const providers = new Map<string, "openai" | "anthropic" | "gemini">([
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

/** undefined for a provider calltrace does not price or store. */
export function calltraceProvider(name: string): "openai" | "anthropic" | "gemini" | undefined {
  return providers.get(name.toLowerCase());
}

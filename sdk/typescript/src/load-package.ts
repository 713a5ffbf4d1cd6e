import { createRequire } from "node:module";

// Resolve provider packages from here, as the application would from its
// node_modules (they are optional peer dependencies of this package).
const requireHere = createRequire(import.meta.url);

/** The CommonJS build of a package, or `undefined` when it is not installed. */
export function requirePackage(name: string): unknown {
  try {
    return requireHere(name);
  } catch (error) {
    return notInstalled(error, name);
  }
}

/** The ESM build of a package, or `undefined` when it is not installed. */
export async function importPackage(name: string): Promise<unknown> {
  try {
    return await import(name);
  } catch (error) {
    return notInstalled(error, name);
  }
}

function notInstalled(error: unknown, name: string): undefined {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : "";
  // A missing package is skipped silently, as is the CommonJS side of an
  // ESM-only package; a package that is there but fails to load (or misses a
  // dependency of its own) is worth a warning.
  if ((code === "MODULE_NOT_FOUND" || code === "ERR_MODULE_NOT_FOUND") && message.includes(`'${name}'`)) {
    return undefined;
  }
  if (code === "ERR_REQUIRE_ESM") return undefined;
  throw error;
}

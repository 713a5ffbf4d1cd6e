import { existsSync, readFileSync, realpathSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, sep } from "node:path";
import { pathToFileURL } from "node:url";

// This SDK's own location: only a last resort. Installed with `file:` or
// `npm link`, it sits in its own folder with its own (development) copies of
// the provider packages, which the application never loads.
const requireHere = createRequire(import.meta.url);

/** One installed copy of a provider package: its folder, and how to load each of its builds. */
export interface PackageCopy {
  /** The package folder, as a real path. */
  dir: string;
  /** The CommonJS build, or `undefined` when the package has none (ESM only). */
  require(): unknown;
  /** The ESM build. */
  import(): Promise<unknown>;
}

/**
 * The copies of package `name` that the application loads: resolved as
 * `require` would from the application's main module and from the working
 * directory (two places, and two copies when they differ). When neither
 * finds one, the copy this SDK itself resolves, if any.
 */
export function findPackage(name: string): PackageCopy[] {
  const copies = new Map<string, PackageCopy>();
  for (const base of applicationBases()) {
    const found = locate(name, base);
    if (found && !copies.has(found)) copies.set(found, copyAt(name, found, createRequire(base)));
  }
  if (copies.size > 0) return [...copies.values()];
  let own: string;
  try {
    own = requireHere.resolve(name);
  } catch (error) {
    if (notInstalled(error, name)) return [];
    throw error;
  }
  const dir = packageRoot(own, name) ?? dirname(own);
  return [{ dir, require: () => requirePackage(name), import: () => importPackage(name) }];
}

/** Files (module ids) the application required from a copy of `name` other than `dirs`: one per copy. */
export function otherLoadedCopies(name: string, dirs: readonly string[]): string[] {
  const others = new Set<string>();
  for (const file of Object.keys(requireHere.cache)) {
    const root = packageRoot(file, name);
    if (root && !dirs.includes(root)) others.add(root);
  }
  return [...others];
}

/** The CommonJS build of a package as this SDK resolves it, or `undefined` when it is not installed. */
export function requirePackage(name: string): unknown {
  try {
    return requireHere(name);
  } catch (error) {
    if (notInstalled(error, name) || isEsmOnly(error)) return undefined;
    throw error;
  }
}

/** The ESM build of a package as this SDK resolves it, or `undefined` when it is not installed. */
export async function importPackage(name: string): Promise<unknown> {
  try {
    return await import(name);
  } catch (error) {
    if (notInstalled(error, name)) return undefined;
    throw error;
  }
}

// Paths of files inside the bases: createRequire wants a file, which need not exist.
function applicationBases(): string[] {
  const bases: string[] = [];
  const main = process.argv[1];
  if (main) {
    try {
      bases.push(join(dirname(realpathSync(main)), "noop.js"));
    } catch {
      // `node -e`, a REPL: no main module
    }
  }
  bases.push(join(process.cwd(), "noop.js"));
  return bases;
}

/** The real path of the folder of `name` that `require` from `base` would use, if any. */
function locate(name: string, base: string): string | undefined {
  for (const folder of createRequire(base).resolve.paths(name) ?? []) {
    const dir = join(folder, name);
    if (existsSync(join(dir, "package.json"))) return realpathSync(dir);
  }
  return undefined;
}

function copyAt(name: string, dir: string, requireFromBase: NodeJS.Require): PackageCopy {
  return {
    dir,
    require() {
      try {
        return requireFromBase(name);
      } catch (error) {
        if (isEsmOnly(error)) return undefined;
        throw error;
      }
    },
    import: () => import(pathToFileURL(realpathSync(join(dir, esmEntry(dir)))).href),
  };
}

// The ESM entry point, as Node's `import` picks it from the package's
// `exports` (conditions node, import, default), else its `main`.
function esmEntry(dir: string): string {
  const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { exports?: unknown; main?: string };
  let target = manifest.exports;
  if (isObject(target) && Object.keys(target).some((key) => key.startsWith("."))) target = target["."];
  return (target === undefined ? undefined : pick(target)) ?? manifest.main ?? "index.js";
}

function pick(target: unknown): string | undefined {
  if (typeof target === "string") return target;
  if (Array.isArray(target)) {
    for (const option of target) {
      const found = pick(option);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (!isObject(target)) return undefined;
  for (const [condition, value] of Object.entries(target)) {
    if (condition !== "node" && condition !== "import" && condition !== "default") continue;
    const found = pick(value);
    if (found !== undefined) return found;
  }
  return undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** The folder of package `name` that `file` lies in (the innermost), if any. */
function packageRoot(file: string, name: string): string | undefined {
  const marker = `${sep}node_modules${sep}${name.split("/").join(sep)}${sep}`;
  const at = file.lastIndexOf(marker);
  return at < 0 ? undefined : file.slice(0, at + marker.length - 1);
}

function notInstalled(error: unknown, name: string): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : "";
  // A missing package is skipped silently; a package that is there but fails
  // to load (or misses a dependency of its own) is worth a warning.
  return (code === "MODULE_NOT_FOUND" || code === "ERR_MODULE_NOT_FOUND") && message.includes(`'${name}'`);
}

// The CommonJS side of an ESM-only package: there is nothing to patch there.
function isEsmOnly(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === "ERR_REQUIRE_ESM";
}

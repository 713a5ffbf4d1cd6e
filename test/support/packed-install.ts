import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));
/** npm without its notices. */
export const quietNpmEnv = { ...process.env, npm_config_loglevel: "error", npm_config_update_notifier: "false", npm_config_fund: "false" };

export interface PackedInstall {
  /** The user's project: package.json and node_modules/calltrace, production dependencies only. */
  app: string;
  /** The installed package's command, to run with `node` (npx runs the same file). */
  bin: string;
  remove(): void;
}

/**
 * Packs the repository as `npm pack` does for a user (prepack compiles dist/, prepare builds the
 * dashboard), in a copy of the checkout so the build never touches the web/dist that other tests
 * serve, then installs the tarball into an empty project with production dependencies only, from
 * the npm cache where it has the packages. Install scripts are off: the only one, the native build
 * of better-sqlite3 (minutes on a busy machine; its prebuilt binaries come from GitHub, which CI
 * cannot reach), is replaced by the binary this checkout already built for this Node, of the same
 * version.
 */
export function packAndInstall(): PackedInstall {
  const scratch = mkdtempSync(join(tmpdir(), "calltrace-pack-"));
  const checkout = join(scratch, "checkout");
  const files = execFileSync("git", ["ls-files", "-co", "--exclude-standard", "-z"], { cwd: root, encoding: "utf8" }).split("\0");
  for (const file of files.filter((f) => f && existsSync(join(root, f)))) {
    mkdirSync(dirname(join(checkout, file)), { recursive: true });
    copyFileSync(join(root, file), join(checkout, file));
  }
  symlinkSync(join(root, "node_modules"), join(checkout, "node_modules"));
  const packed = join(scratch, "packed");
  mkdirSync(packed);
  execFileSync("npm", ["pack", "--pack-destination", packed], { cwd: checkout, env: quietNpmEnv, stdio: ["ignore", "ignore", "inherit"] });
  const tarball = readdirSync(packed).find((f) => f.endsWith(".tgz"));
  if (!tarball) throw new Error("npm pack made no tarball");
  const app = join(scratch, "app");
  mkdirSync(app);
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "calltrace-user", private: true }));
  execFileSync("npm", ["install", "--omit=dev", "--prefer-offline", "--ignore-scripts", "--no-audit", join(packed, tarball)], {
    cwd: app,
    env: quietNpmEnv,
    stdio: ["ignore", "ignore", "inherit"],
  });
  const sqlite = (base: string) => join(base, "node_modules/better-sqlite3");
  const version = (base: string) => JSON.parse(readFileSync(join(sqlite(base), "package.json"), "utf8")).version as string;
  if (version(app) !== version(root)) throw new Error(`better-sqlite3 ${version(app)} installed, ${version(root)} built here`);
  mkdirSync(join(sqlite(app), "build/Release"), { recursive: true });
  copyFileSync(join(sqlite(root), "build/Release/better_sqlite3.node"), join(sqlite(app), "build/Release/better_sqlite3.node"));
  return {
    app,
    bin: join(app, "node_modules/calltrace/bin/calltrace.js"),
    remove: () => rmSync(scratch, { recursive: true, force: true }),
  };
}

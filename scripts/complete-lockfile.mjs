// The npm registry this project's machines reach serves only some platforms'
// builds of packages that ship native binaries as optional dependencies
// (@rollup/rollup-<os>-<cpu>, @biomejs/cli-<os>-<cpu>). `npm install` then
// leaves the others out of package-lock.json, and `npm ci` refuses the
// lockfile as out of sync. This adds an entry for each missing one, with the
// os, cpu and libc its name states, so npm ci skips it on other platforms and
// fetches it where it applies. Run after `npm install`, for the root lockfile and the SDK's:
//   node scripts/complete-lockfile.mjs [path/to/package-lock.json ...]
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";

const lockFiles = process.argv.length > 2 ? process.argv.slice(2) : ["package-lock.json"];
const OSES = new Set([
  "aix",
  "android",
  "darwin",
  "freebsd",
  "linux",
  "netbsd",
  "openbsd",
  "openharmony",
  "sunos",
  "win32",
]);

/** `{ os, cpu, libc? }` from a name such as rollup-linux-arm64-musl, or undefined. */
function platformOf(name) {
  const parts = name.slice(name.lastIndexOf("/") + 1).split("-");
  const at = parts.findIndex((part) => OSES.has(part));
  if (at < 0 || at + 1 >= parts.length) return undefined;
  const [os, cpu, abi = ""] = parts.slice(at);
  const libc = abi.startsWith("musl") ? ["musl"] : abi.startsWith("gnu") && os === "linux" ? ["glibc"] : undefined;
  return { os: [os], cpu: [cpu], ...(libc ? { libc } : {}) };
}

for (const file of lockFiles) completeLockfile(resolve(file));

/** Adds the missing platform packages' entries to one lockfile. */
function completeLockfile(file) {
  const lock = JSON.parse(readFileSync(file, "utf8"));
  let added = 0;
  for (const [path, entry] of Object.entries(lock.packages)) {
    const base = path.slice(0, path.lastIndexOf("node_modules/"));
    for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
      const key = `${base}node_modules/${name}`;
      if (lock.packages[key] || lock.packages[`node_modules/${name}`]) continue;
      const platform = platformOf(name);
      if (!platform) throw new Error(`cannot tell the platform of ${name}: add its lockfile entry by hand`);
      lock.packages[key] = { version, optional: true, ...platform };
      added++;
    }
  }
  lock.packages = Object.fromEntries(
    Object.entries(lock.packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a.localeCompare(b))),
  );
  writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
  console.log(`${file}: added ${added} lockfile entries`);
}

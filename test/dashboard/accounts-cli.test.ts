import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { calltraceBin, repoRoot, runCli, runCliRaw } from "../support/cli.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { tempDir } from "../support/temp-dir.js";

/** Runs the CLI with `input` on standard input. */
function withStdin(args: string[], env: Record<string, string>, input: string) {
  return spawnSync(process.execPath, [calltraceBin, ...args], { cwd: repoRoot, env: { ...process.env, ...env }, input, encoding: "utf8" });
}

describe("calltrace accounts", () => {
  it("creates an account with its first user (password from stdin), lists it, and moves it to another plan", () => {
    const env = { DATA_DIR: tempDir() };
    const created = spawnSync(process.execPath, [calltraceBin, "accounts", "create", "--email", "Owner@Example.com", "--password-stdin"], {
      cwd: repoRoot,
      env: { ...process.env, ...env },
      input: "a long enough password\n",
      encoding: "utf8",
    });
    expect(created.status, created.stderr).toBe(0);
    const accountId = /created project (prj_\S+) \(free\) for owner@example.com/.exec(created.stdout)?.[1];
    expect(accountId).toBeDefined();

    const listed = JSON.parse(runCli(["accounts", "list", "--json"], env)) as {
      id: string;
      plan: string;
      emails: string[];
      active_keys: number;
    }[];
    expect(listed).toEqual([expect.objectContaining({ id: accountId, plan: "free", emails: ["owner@example.com"], active_keys: 0 })]);

    expect(runCli(["accounts", "set-plan", accountId!, "pro"], env)).toContain(`project ${accountId} is now on plan pro`);
    expect(runCli(["accounts", "list"], env)).toMatch(new RegExp(`${accountId}\\s+pro\\s+0\\s+\\S+\\s+owner@example.com`));

    const unknownPlan = runCliRaw(["accounts", "set-plan", accountId!, "platinum"], env);
    expect(unknownPlan.status).toBe(2);
    expect(unknownPlan.stderr).toContain("unknown plan platinum; configured: free, pro");
    const unknownAccount = runCliRaw(["accounts", "set-plan", "acc_nope", "pro"], env);
    expect(unknownAccount.status).toBe(2);
    expect(unknownAccount.stderr).toContain("no project acc_nope");
  });

  it("set-password replaces a user's password and ends their sessions; delete removes the account with its keys and traces", async () => {
    const dataDir = tempDir();
    const env = { DATA_DIR: dataDir };
    const created = withStdin(["accounts", "create", "--email", "lost@example.com", "--password-stdin"], env, "the first password\n");
    const accountId = /created project (prj_\S+)/.exec(created.stdout)![1]!;
    const store = openSqliteStore(dataDir);
    try {
      const user = (await store.users.findUserByEmail("lost@example.com"))!;
      await store.users.createSession({ tokenHash: "t1", userId: user.id, createdAt: new Date(), expiresAt: new Date(Date.now() + 60_000), userAgent: "" });

      expect(runCliRaw(["accounts", "set-password", "lost@example.com"], env).stderr).toContain("--password-stdin");
      expect(withStdin(["accounts", "set-password", "nobody@example.com", "--password-stdin"], env, "a new password here").stderr).toContain("no user with email nobody@example.com");
      const set = withStdin(["accounts", "set-password", "LOST@example.com", "--password-stdin"], env, "a new password here\n");
      expect(set.status, set.stderr).toBe(0);
      expect(set.stdout).toContain("password of lost@example.com changed; 1 session ended");
      expect((await store.users.getUser(user.id))!.passwordHash).not.toBe(user.passwordHash);
      expect(await store.users.listSessions(user.id)).toEqual([]);

      const key = runCli(["keys", "create", "--account", accountId, "--name", "doomed"], env).trim();
      expect(key).toMatch(/^ct_/);
      expect(runCliRaw(["accounts", "delete", accountId], env).stderr).toContain("--yes");
      expect(runCli(["accounts", "delete", accountId, "--yes"], env)).toContain(`deleted project ${accountId}`);
      expect(await store.teams.getProject(accountId)).toBeUndefined();
      expect(await store.keys.listKeys(accountId)).toEqual([]);
      expect(runCliRaw(["accounts", "delete", accountId, "--yes"], env).stderr).toContain(`no project ${accountId}`);
    } finally {
      await store.close();
    }
  });

  it("keys create refuses a blank name and more active keys than the account's plan allows (max_keys)", () => {
    const dataDir = tempDir();
    const plansFile = `${dataDir}/plans.json`;
    spawnSync("sh", ["-c", `echo '{"free":{"per_minute":10,"per_month":100,"max_keys":2}}' > ${plansFile}`]);
    const env = { DATA_DIR: dataDir, PLANS_FILE: plansFile };
    const created = withStdin(["accounts", "create", "--email", "few@example.com", "--password-stdin"], env, "long enough password");
    const accountId = /created project (prj_\S+)/.exec(created.stdout)![1]!;
    expect(runCliRaw(["keys", "create", "--account", accountId, "--name", "   "], env).stderr).toContain("--name must not be blank");
    runCli(["keys", "create", "--account", accountId, "--name", "one"], env);
    runCli(["keys", "create", "--account", accountId, "--name", "two"], env);
    const third = runCliRaw(["keys", "create", "--account", accountId, "--name", "three"], env);
    expect(third.status).toBe(2);
    expect(third.stderr).toContain(`project ${accountId} has 2 active keys, the most its plan free allows (max_keys); revoke one first`);
  });
});

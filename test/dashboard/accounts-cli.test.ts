import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { calltraceBin, repoRoot, runCli, runCliRaw } from "../support/cli.js";
import { tempDir } from "../support/temp-dir.js";

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
    const accountId = /created account (acc_\S+) \(free\) for owner@example.com/.exec(created.stdout)?.[1];
    expect(accountId).toBeDefined();

    const listed = JSON.parse(runCli(["accounts", "list", "--json"], env)) as {
      id: string;
      plan: string;
      emails: string[];
      active_keys: number;
    }[];
    expect(listed).toEqual([expect.objectContaining({ id: accountId, plan: "free", emails: ["owner@example.com"], active_keys: 0 })]);

    expect(runCli(["accounts", "set-plan", accountId!, "pro"], env)).toContain(`account ${accountId} is now on plan pro`);
    expect(runCli(["accounts", "list"], env)).toMatch(new RegExp(`${accountId}\\s+pro\\s+0\\s+\\S+\\s+owner@example.com`));

    const unknownPlan = runCliRaw(["accounts", "set-plan", accountId!, "platinum"], env);
    expect(unknownPlan.status).toBe(2);
    expect(unknownPlan.stderr).toContain("unknown plan platinum; configured: free, pro");
    const unknownAccount = runCliRaw(["accounts", "set-plan", "acc_nope", "pro"], env);
    expect(unknownAccount.status).toBe(2);
    expect(unknownAccount.stderr).toContain("no account acc_nope");
  });
});

import { text } from "node:stream/consumers";
import { parseCommandArgs, resolveConfig } from "../config/config.js";
import { loadPlans, type Plans } from "../config/plans.js";
import { isDeliverableEmail, normalizeEmail } from "../dashboard/email-address.js";
import { hashPassword } from "../dashboard/password-hash.js";
import { openStore } from "../store/open-store.js";
import type { Store } from "../store/store.js";
import { EmailTakenError } from "../store/user-store.js";
import { UsageError } from "./usage-error.js";

/**
 * `calltrace accounts list|set-plan|create|set-password|delete`, against whichever store is
 * configured. An account id is a project's id (the accounts of earlier releases became projects
 * with the same ids, docs/teams.md), so scripts written for accounts keep working.
 */
export async function accountsCommand(argv: string[]): Promise<void> {
  const { values, positionals } = parseCommandArgs(argv, {
    json: { type: "boolean" },
    email: { type: "string" },
    plan: { type: "string" },
    "password-stdin": { type: "boolean" },
    yes: { type: "boolean" },
  });
  const config = resolveConfig(values);
  const plans = loadPlans(config.plansFile);
  const [action, ...args] = positionals;
  if (action !== "list" && action !== "set-plan" && action !== "create" && action !== "set-password" && action !== "delete")
    throw new UsageError("accounts needs one of: list, set-plan, create, set-password, delete");
  if (action === "set-plan" && args.length !== 2) throw new UsageError("accounts set-plan needs <project-id> <plan>");
  if (action === "set-password" && (args.length !== 1 || values["password-stdin"] !== true)) {
    throw new UsageError("accounts set-password needs <email> --password-stdin (the new password is read from standard input)");
  }
  if (action === "delete" && (args.length !== 1 || values.yes !== true)) {
    throw new UsageError("accounts delete needs <project-id> --yes: it deletes the project's keys and traces for good");
  }
  if (action === "create" && (values.email === undefined || values["password-stdin"] !== true)) {
    throw new UsageError("accounts create needs --email EMAIL --password-stdin (the password is read from standard input)");
  }
  const store = await openStore(config);
  try {
    if (action === "list") return await listAccounts(store, values.json === true);
    if (action === "set-plan") return await setPlan(store, plans, args[0]!, args[1]!);
    if (action === "set-password") return await setPassword(store, args[0]!);
    if (action === "delete") return await deleteAccount(store, args[0]!);
    return await createAccount(store, plans, values.email!, values.plan ?? "free");
  } finally {
    await store.close();
  }
}

async function listAccounts(store: Store, json: boolean): Promise<void> {
  const accounts = await store.teams.projectSummaries();
  const keys = await store.keys.listKeys();
  const activeKeys = (accountId: string) => keys.filter((k) => k.accountId === accountId && !k.revokedAt).length;
  if (json) {
    const rows = accounts.map((a) => ({
      id: a.id,
      organization: a.organizationId,
      name: a.name,
      plan: a.plan,
      emails: a.emails,
      active_keys: activeKeys(a.id),
      created: a.createdAt.toISOString(),
    }));
    console.log(JSON.stringify(rows));
    return;
  }
  const header = ["ID", "PLAN", "KEYS", "CREATED", "USERS"];
  const rows = accounts.map((a) => [
    a.id,
    a.plan,
    String(activeKeys(a.id)),
    a.createdAt.toISOString(),
    a.emails.join(", ") || `(no users) ${a.name}`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  for (const row of [header, ...rows])
    console.log(
      row
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join("  ")
        .trimEnd(),
    );
}

async function setPlan(store: Store, plans: Plans, accountId: string, plan: string): Promise<void> {
  if (!plans.has(plan)) throw new UsageError(`unknown plan ${plan}; configured: ${[...plans.keys()].join(", ")}`);
  const project = await store.teams.updateProject(accountId, { plan });
  if (!project) throw new UsageError(`no project ${accountId}`);
  // Key verifiers cache a key's plan for a few seconds (D20's bound), so the change is live within that.
  console.log(`project ${project.id} is now on plan ${project.plan}`);
}

/** A password from standard input (one trailing newline dropped), at least 10 characters as for sign-up. */
async function passwordFromStdin(): Promise<string> {
  const password = (await text(process.stdin)).replace(/\r?\n$/, "");
  if (password.length < 10) throw new UsageError("the password must be at least 10 characters");
  return password;
}

/** For a user who lost their password: a new one, and every session of theirs ends. */
async function setPassword(store: Store, email: string): Promise<void> {
  const user = await store.users.findUserByEmail(normalizeEmail(email));
  if (!user) throw new UsageError(`no user with email ${normalizeEmail(email)}`);
  await store.users.setPasswordHash(user.id, await hashPassword(await passwordFromStdin()));
  const ended = await store.users.deleteUserSessions(user.id);
  console.log(`password of ${user.email} changed; ${ended} session${ended === 1 ? "" : "s"} ended`);
}

/**
 * Deletes a project with everything of it. A running server's key cache may accept the
 * project's keys for up to 2 seconds more; traces they bring in then belong to no project and
 * are never shown (run the command again to sweep them).
 */
async function deleteAccount(store: Store, projectId: string): Promise<void> {
  if (!(await store.teams.deleteProject(projectId))) throw new UsageError(`no project ${projectId}`);
  console.log(`deleted project ${projectId} with its keys and traces`);
}

/** For installs with sign-up closed: the operator creates each user, with an organization and project of their own. */
async function createAccount(store: Store, plans: Plans, email: string, plan: string): Promise<void> {
  if (!plans.has(plan)) throw new UsageError(`unknown plan ${plan}; configured: ${[...plans.keys()].join(", ")}`);
  const password = await passwordFromStdin();
  const normalized = normalizeEmail(email);
  if (!isDeliverableEmail(normalized)) throw new UsageError(`${normalized} is not an email address such as name@example.com`);
  try {
    const user = await store.users.createUser({ email: normalized, passwordHash: await hashPassword(password) });
    const { project } = await store.teams.createOrganization({ name: normalized, ownerUserId: user.id, project: { name: "Default", plan } });
    console.log(`created project ${project.id} (${plan}) for ${normalized}`);
  } catch (error) {
    if (error instanceof EmailTakenError) throw new UsageError(`a user with email ${normalized} exists already`);
    throw error;
  }
}

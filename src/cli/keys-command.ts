import { mintApiKey } from "../auth/api-key.js";
import { parseCommandArgs, resolveConfig } from "../config/config.js";
import { defaultMaxKeys, loadPlans } from "../config/plans.js";
import { KeyLimitError } from "../store/key-store.js";
import { openStore } from "../store/open-store.js";
import { isKeyScope, type ApiKeyRecord } from "../store/records.js";
import type { ProjectRecord } from "../store/team-store.js";
import type { Store } from "../store/store.js";
import { UsageError } from "./usage-error.js";

/**
 * `calltrace keys create|list|revoke`, against whichever store is configured, while the server
 * runs. A key belongs to the project `--project` names (`--account`, its older name), or else to
 * the default project of its `--plan`, the same one every time, so that a read key and an ingest
 * key made this way see the same traces.
 */
export async function keysCommand(argv: string[]): Promise<void> {
  const { values, positionals } = parseCommandArgs(argv, {
    plan: { type: "string" },
    name: { type: "string" },
    account: { type: "string" },
    project: { type: "string" },
    scope: { type: "string" },
    json: { type: "boolean" },
  });
  const config = resolveConfig(values);
  const [action, target] = positionals;
  const store = await openStore(config);
  try {
    switch (action) {
      case "create":
        return await createKey(store, loadPlans(config.plansFile), values);
      case "list":
        return await listKeys(store, values.json === true);
      case "revoke":
        if (!target) throw new UsageError("keys revoke needs the key's id or prefix");
        return await revokeKey(store, target);
      default:
        throw new UsageError("keys needs one of: create, list, revoke");
    }
  } finally {
    await store.close();
  }
}

async function createKey(
  store: Store,
  plans: ReturnType<typeof loadPlans>,
  options: { plan?: string; name?: string; account?: string; project?: string; scope?: string; json?: boolean },
): Promise<void> {
  const name = options.name?.trim() ?? "";
  if (options.name !== undefined && !name) throw new UsageError("--name must not be blank");
  const scope = options.scope ?? "ingest";
  if (!isKeyScope(scope)) throw new UsageError(`unknown scope ${scope}; one of ingest, read`);
  const project = await keyProject(store, plans, options.project ?? options.account, options.plan);
  const minted = mintApiKey();
  const maxKeys = plans.get(project.plan)?.maxKeys ?? defaultMaxKeys.free;
  const key = await store.keys
    .createKey({ accountId: project.id, name, scope, hash: minted.hash, prefix: minted.prefix, maxActive: maxKeys })
    .catch((error: unknown) => {
      if (error instanceof KeyLimitError) {
        throw new UsageError(`project ${project.id} has ${maxKeys} active keys, the most its plan ${project.plan} allows (max_keys); revoke one first`);
      }
      throw error;
    });
  await auditKey(store, project, "key.create", key);
  if (options.json) {
    console.log(
      JSON.stringify({
        id: key.id,
        key: minted.plaintext,
        prefix: key.prefix,
        plan: key.plan,
        scope: key.scope,
        name: key.name,
        project: key.accountId,
        account: key.accountId,
        created: key.createdAt.toISOString(),
      }),
    );
  } else {
    console.log(minted.plaintext);
  }
}

/** The project `id` names, or the default project of `plan`. */
export async function keyProject(
  store: Store,
  plans: ReturnType<typeof loadPlans>,
  id: string | undefined,
  plan: string | undefined,
  command = "keys create",
): Promise<ProjectRecord> {
  if (id !== undefined) {
    const project = await store.teams.getProject(id);
    if (!project) throw new UsageError(`no project ${id}`);
    if (plan !== undefined && plan !== project.plan) throw new UsageError(`project ${project.id} is on plan ${project.plan}; a key takes its project's plan`);
    return project;
  }
  if (plan === undefined) throw new UsageError(`${command} needs --plan (one of ${[...plans.keys()].join(", ")}) or --project`);
  if (!plans.has(plan)) throw new UsageError(`unknown plan ${plan}; configured: ${[...plans.keys()].join(", ")}`);
  return store.teams.defaultProject(plan);
}

async function listKeys(store: Store, json: boolean): Promise<void> {
  const keys = await store.keys.listKeys();
  if (json) {
    console.log(JSON.stringify(keys.map(publicKey)));
    return;
  }
  const rows = keys.map((k) => [
    k.id,
    `ct_${k.prefix}…`,
    k.plan,
    k.scope,
    k.revokedAt ? "revoked" : "active",
    k.createdAt.toISOString(),
    k.lastUsedAt?.toISOString() ?? "never",
    k.name,
  ]);
  const header = ["ID", "PREFIX", "PLAN", "SCOPE", "STATUS", "CREATED", "LAST USED", "NAME"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  for (const row of [header, ...rows]) console.log(row.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd());
}

async function revokeKey(store: Store, target: string): Promise<void> {
  const key = await store.keys.revokeKey(target);
  if (!key) throw new UsageError(`no key has the id or unique prefix ${JSON.stringify(target)}`);
  const project = await store.teams.getProject(key.accountId);
  if (project) await auditKey(store, project, "key.revoke", key);
  console.log(`revoked ${key.id} (ct_${key.prefix}…)`);
}

/** The key's line in its organization's audit log, made by `cli` (docs/teams.md): its id and visible prefix, never a secret. */
function auditKey(store: Store, project: ProjectRecord, action: "key.create" | "key.revoke", key: ApiKeyRecord) {
  return store.teams.appendAudit({
    organizationId: project.organizationId,
    projectId: project.id,
    actor: "cli",
    action,
    target: key.id,
    details: { name: key.name, scope: key.scope, prefix: key.prefix },
  });
}

/** A key as shown to people: never its hash. */
function publicKey(key: ApiKeyRecord) {
  return {
    id: key.id,
    prefix: key.prefix,
    plan: key.plan,
    scope: key.scope,
    name: key.name,
    project: key.accountId,
    account: key.accountId,
    status: key.revokedAt ? "revoked" : "active",
    created: key.createdAt.toISOString(),
    revoked: key.revokedAt?.toISOString() ?? null,
    last_used: key.lastUsedAt?.toISOString() ?? null,
  };
}

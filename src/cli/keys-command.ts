import { mintApiKey } from "../auth/api-key.js";
import { parseCommandArgs, resolveConfig } from "../config/config.js";
import { defaultMaxKeys, loadPlans } from "../config/plans.js";
import { KeyLimitError } from "../store/key-store.js";
import { openStore } from "../store/open-store.js";
import type { AccountRecord, ApiKeyRecord } from "../store/records.js";
import type { Store } from "../store/store.js";
import { UsageError } from "./usage-error.js";

/** `calltrace keys create|list|revoke`, against whichever store is configured, while the server runs. */
export async function keysCommand(argv: string[]): Promise<void> {
  const { values, positionals } = parseCommandArgs(argv, {
    plan: { type: "string" },
    name: { type: "string" },
    account: { type: "string" },
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
  options: { plan?: string; name?: string; account?: string; json?: boolean },
): Promise<void> {
  const name = options.name?.trim() ?? "";
  if (options.name !== undefined && !name) throw new UsageError("--name must not be blank");
  let account: AccountRecord | undefined;
  if (options.account !== undefined) {
    account = await store.keys.getAccount(options.account);
    if (!account) throw new UsageError(`no account ${options.account}`);
    if (options.plan !== undefined && options.plan !== account.plan) {
      throw new UsageError(`account ${account.id} is on plan ${account.plan}; a key takes its account's plan`);
    }
  } else {
    if (options.plan === undefined) throw new UsageError(`keys create needs --plan (one of ${[...plans.keys()].join(", ")})`);
    if (!plans.has(options.plan)) throw new UsageError(`unknown plan ${options.plan}; configured: ${[...plans.keys()].join(", ")}`);
    account = await store.keys.createAccount({ name, plan: options.plan });
  }
  const minted = mintApiKey();
  const maxKeys = plans.get(account.plan)?.maxKeys ?? defaultMaxKeys.free;
  const key = await store.keys.createKey({ accountId: account.id, name, hash: minted.hash, prefix: minted.prefix, maxActive: maxKeys }).catch((error: unknown) => {
    if (error instanceof KeyLimitError) {
      throw new UsageError(`account ${account.id} has ${maxKeys} active keys, the most its plan ${account.plan} allows (max_keys); revoke one first`);
    }
    throw error;
  });
  if (options.json) {
    console.log(
      JSON.stringify({ id: key.id, key: minted.plaintext, prefix: key.prefix, plan: key.plan, name: key.name, account: key.accountId, created: key.createdAt.toISOString() }),
    );
  } else {
    console.log(minted.plaintext);
  }
}

async function listKeys(store: Store, json: boolean): Promise<void> {
  const keys = await store.keys.listKeys();
  if (json) {
    console.log(JSON.stringify(keys.map(publicKey)));
    return;
  }
  const rows = keys.map((k) => [k.id, `ct_${k.prefix}…`, k.plan, k.revokedAt ? "revoked" : "active", k.createdAt.toISOString(), k.lastUsedAt?.toISOString() ?? "never", k.name]);
  const header = ["ID", "PREFIX", "PLAN", "STATUS", "CREATED", "LAST USED", "NAME"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  for (const row of [header, ...rows]) console.log(row.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd());
}

async function revokeKey(store: Store, target: string): Promise<void> {
  const key = await store.keys.revokeKey(target);
  if (!key) throw new UsageError(`no key has the id or unique prefix ${JSON.stringify(target)}`);
  console.log(`revoked ${key.id} (ct_${key.prefix}…)`);
}

/** A key as shown to people: never its hash. */
function publicKey(key: ApiKeyRecord) {
  return {
    id: key.id,
    prefix: key.prefix,
    plan: key.plan,
    name: key.name,
    account: key.accountId,
    status: key.revokedAt ? "revoked" : "active",
    created: key.createdAt.toISOString(),
    revoked: key.revokedAt?.toISOString() ?? null,
    last_used: key.lastUsedAt?.toISOString() ?? null,
  };
}

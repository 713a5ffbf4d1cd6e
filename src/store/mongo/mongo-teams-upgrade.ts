import { MongoServerError } from "mongodb";
import type { MongoCollections } from "./mongo-collections.js";

/**
 * Brings a database written before teams (D50) to them, at every start-up, idempotently and
 * safely from several instances at once: each account without an organization gets one of its
 * own (its id made from the account's, so racing instances make the same one), and each user
 * who still names an account becomes an owner of that account's organization before the
 * account is taken off the user. The account's id stays its project's id: no key, trace or
 * roll-up is touched.
 */
export async function upgradeToTeams(c: MongoCollections): Promise<void> {
  const organizationOf = (accountId: string) => `org_${accountId.slice(accountId.indexOf("_") + 1)}`;
  for await (const account of c.accounts.find({ organizationId: { $exists: false } })) {
    const organizationId = organizationOf(account._id);
    await ignoreDuplicate(
      c.organizations.updateOne(
        { _id: organizationId },
        { $setOnInsert: { name: account.name, createdAt: account.createdAt, joinDomain: "", joinRole: "member" } },
        { upsert: true },
      ),
    );
    await c.accounts.updateOne({ _id: account._id }, { $set: { organizationId, timeZone: "" } });
  }
  for await (const user of c.users.find({ accountId: { $exists: true } })) {
    const organizationId = organizationOf(user.accountId!);
    await ignoreDuplicate(
      c.memberships.updateOne(
        { _id: `${organizationId}:${user._id}` },
        { $setOnInsert: { organizationId, userId: user._id, role: "owner", createdAt: user.createdAt } },
        { upsert: true },
      ),
    );
    await c.users.updateOne({ _id: user._id }, { $unset: { accountId: "" } });
  }
}

async function ignoreDuplicate(write: Promise<unknown>): Promise<void> {
  try {
    await write;
  } catch (error) {
    if (!(error instanceof MongoServerError && error.code === 11000)) throw error;
  }
}

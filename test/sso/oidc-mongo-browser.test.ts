import { afterAll, beforeAll, describe, it } from "vitest";
import { type MongoTestServer, startMongoTestServer } from "../support/ferretdb.js";
import { domainJoin, type SsoServices, startSsoServices } from "./sso-browser.js";

// Single sign-on on the MongoDB store (FerretDB, or MONGODB_URI's server): the same browser
// sign-in with a domain join as on the embedded store.

let mongo: MongoTestServer;
let sso: SsoServices;

beforeAll(async () => {
  mongo = await startMongoTestServer();
  sso = await startSsoServices([{ args: ["--mongodb-uri", mongo.freshUri()] }]);
});

afterAll(async () => {
  await sso?.close();
  await mongo?.close();
});

describe("single sign-on on the MongoDB store", () => {
  it("joins a person from the organization's email domain with its join role, and audits it", () => domainJoin(sso.services[0]!.url));
});

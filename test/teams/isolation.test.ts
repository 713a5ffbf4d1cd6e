import { beforeAll, describe, expect, it } from "vitest";
import { AccountService } from "../../gen/calltrace/v1/account_service_pb.js";
import { AlertService } from "../../gen/calltrace/v1/alert_service_pb.js";
import { AuthService } from "../../gen/calltrace/v1/auth_service_pb.js";
import { PriceService } from "../../gen/calltrace/v1/price_service_pb.js";
import { QueryService } from "../../gen/calltrace/v1/query_service_pb.js";
import { TeamService } from "../../gen/calltrace/v1/team_service_pb.js";
import { openApiDocument } from "../../src/openapi/openapi-document.js";
import { rpcPolicies } from "../../src/teams/rpc-policies.js";
import { DashboardClient, type Json } from "../dashboard/dashboard-client.js";
import { postTrace, startTestService, traceBody, type TestService } from "../support/test-service.js";

/**
 * Tenancy, walked over every RPC of every dashboard service: a caller naming another
 * organization's project, organization, trace, key, member or invitation gets exactly the answer an
 * id that never existed gets. The table must name every procedure the services have, so a new
 * RPC cannot be added without deciding here what isolates it.
 */

/** The ids of Alice's organization, which Mallory (a member of her own organization only) tries to reach. */
interface Ids {
  project: string;
  organization: string;
  trace: string;
  key: string;
  member: string;
  invitation: string;
  price: string;
  repriceJob: string;
  rule: string;
  destination: string;
  delivery: string;
}

/**
 * Per procedure: the request naming Alice's ids (`foreign`), and the same request naming ids that
 * never existed (`unknown`); both are sent by Mallory and must get the same answer. `own` marks
 * calls that act only on the caller themselves, so there is no other tenant's id to name.
 */
type Case = { foreign: (a: Ids, m: Ids) => Json; unknown: (m: Ids) => Json } | { own: string };

const none = "zz_never_existed";
const project = (extra: Json = {}) => ({ foreign: (a: Ids) => ({ projectId: a.project, ...extra }), unknown: () => ({ projectId: none, ...extra }) });
const organization = (extra: Json = {}) => ({
  foreign: (a: Ids) => ({ organizationId: a.organization, ...extra }),
  unknown: () => ({ organizationId: none, ...extra }),
});
const filtered = project({ filter: {} });
const priceSpec = { provider: "openai", match: "PRICE_MATCH_EXACT", pattern: "gpt-4o", standard: { rates: { input: 1, output: 2 } } };
const grouped = project({ dimension: "DIMENSION_USER" });

const cases: Record<string, Record<string, Case>> = {
  [AuthService.typeName]: {
    SignUp: { own: "creates the caller's own user and organization" },
    LogIn: { own: "signs the caller in" },
    LogOut: { own: "ends the caller's session" },
    GetSession: { own: "tells who the caller is" },
  },
  [QueryService.typeName]: {
    ListTraces: filtered,
    GetUsageTotals: filtered,
    GetUsageByModel: filtered,
    GetUsageByDay: filtered,
    GetUsageByDayTotals: filtered,
    GetUsageByHourTotals: project({ filter: { since: new Date(Date.now() - 3_600_000).toISOString() } }),
    GetUsageByCountry: filtered,
    GetLatencyHistogram: filtered,
    GetUsageByGroup: grouped,
    GetUsageByGroupAndDay: project({ dimension: "DIMENSION_USER", values: ["u"] }),
    GetErrorGroups: filtered,
    ListRuns: filtered,
    GetRun: project({ id: "session:s1" }),
    GetTrace: {
      // Alice's trace id asked in Mallory's own project, and in Alice's.
      foreign: (a, m) => ({ projectId: m.project, id: a.trace }),
      unknown: (m) => ({ projectId: m.project, id: none }),
    },
  },
  [AccountService.typeName]: {
    GetAccount: project(),
    ListKeys: project(),
    CreateKey: project({ name: "x" }),
    RevokeKey: { foreign: (a, m) => ({ projectId: m.project, keyId: a.key }), unknown: (m) => ({ projectId: m.project, keyId: none }) },
    RenameKey: { foreign: (a, m) => ({ projectId: m.project, keyId: a.key, name: "x" }), unknown: (m) => ({ projectId: m.project, keyId: none, name: "x" }) },
    ListSessions: { own: "the caller's own sessions" },
    LogOutEverywhere: { own: "the caller's own sessions" },
    ChangePassword: { own: "the caller's own password" },
    DeleteAccount: { own: "the caller's own user" },
  },
  [TeamService.typeName]: {
    ListOrganizations: { own: "the caller's own memberships" },
    CreateOrganization: { own: "makes a new organization" },
    UpdateOrganization: organization({ name: "x" }),
    DeleteOrganization: organization(),
    CreateProject: organization({ name: "x" }),
    UpdateProject: project({ name: "x" }),
    DeleteProject: project(),
    ListMembers: organization(),
    SetMemberRole: {
      foreign: (a, m) => ({ organizationId: m.organization, userId: a.member, role: "ROLE_VIEWER" }),
      unknown: (m) => ({ organizationId: m.organization, userId: none, role: "ROLE_VIEWER" }),
    },
    RemoveMember: { foreign: (a, m) => ({ organizationId: m.organization, userId: a.member }), unknown: (m) => ({ organizationId: m.organization, userId: none }) },
    TransferOwnership: {
      foreign: (a, m) => ({ organizationId: m.organization, userId: a.member }),
      unknown: (m) => ({ organizationId: m.organization, userId: none }),
    },
    CreateInvitation: organization({ email: "x@example.com", role: "ROLE_VIEWER" }),
    ListInvitations: organization(),
    RevokeInvitation: {
      foreign: (a, m) => ({ organizationId: m.organization, invitationId: a.invitation }),
      unknown: (m) => ({ organizationId: m.organization, invitationId: none }),
    },
    GetInvitation: { own: "a token is its own key: an unknown, used or revoked one is NOT_FOUND alike (test/teams/invitations.test.ts)" },
    AcceptInvitation: { own: "a token is its own key, accepted only by the invited address (test/teams/invitations.test.ts)" },
    ListAuditLog: organization(),
  },
  [PriceService.typeName]: {
    ListPrices: project(),
    CreatePrice: project({ spec: priceSpec }),
    UpdatePrice: {
      foreign: (a, m) => ({ projectId: m.project, priceId: a.price, spec: priceSpec }),
      unknown: (m) => ({ projectId: m.project, priceId: none, spec: priceSpec }),
    },
    DeletePrice: { foreign: (a, m) => ({ projectId: m.project, priceId: a.price }), unknown: (m) => ({ projectId: m.project, priceId: none }) },
    ResolvePrice: project({ provider: "openai", model: "gpt-4o" }),
    StartReprice: project({ from: "2026-01-01T00:00:00Z" }),
    GetReprice: { foreign: (a, m) => ({ projectId: m.project, jobId: a.repriceJob }), unknown: (m) => ({ projectId: m.project, jobId: none }) },
  },
  [AlertService.typeName]: {
    ListRules: project(),
    CreateRule: project({ rule: { kind: "ALERT_KIND_UNPRICED" } }),
    // The rule's id travels inside the rule: Alice's project is named, with her rule.
    UpdateRule: { foreign: (a) => ({ projectId: a.project, rule: { id: a.rule, kind: "ALERT_KIND_UNPRICED" } }), unknown: () => ({ projectId: none, rule: { id: none, kind: "ALERT_KIND_UNPRICED" } }) },
    MuteRule: { foreign: (a, m) => ({ projectId: m.project, ruleId: a.rule, muted: true }), unknown: (m) => ({ projectId: m.project, ruleId: none, muted: true }) },
    DeleteRule: { foreign: (a, m) => ({ projectId: m.project, ruleId: a.rule }), unknown: (m) => ({ projectId: m.project, ruleId: none }) },
    ListEvents: project(),
    ListDestinations: project(),
    CreateDestination: project({ kind: "ALERT_DESTINATION_KIND_EMAIL", emails: ["x@example.com"] }),
    DeleteDestination: { foreign: (a, m) => ({ projectId: m.project, destinationId: a.destination }), unknown: (m) => ({ projectId: m.project, destinationId: none }) },
    RotateDestinationSecret: {
      foreign: (a, m) => ({ projectId: m.project, destinationId: a.destination }),
      unknown: (m) => ({ projectId: m.project, destinationId: none }),
    },
    EnableDestination: { foreign: (a, m) => ({ projectId: m.project, destinationId: a.destination }), unknown: (m) => ({ projectId: m.project, destinationId: none }) },
    ListDeliveries: project(),
    ResendDelivery: { foreign: (a, m) => ({ projectId: m.project, deliveryId: a.delivery }), unknown: (m) => ({ projectId: m.project, deliveryId: none }) },
    SendTestEvent: { foreign: (a, m) => ({ projectId: m.project, destinationId: a.destination }), unknown: (m) => ({ projectId: m.project, destinationId: none }) },
  },
};

/** What the answer says, with the id it names made anonymous, so two answers can be compared. */
const gist = (answer: { status: number; body: Json }, id: string) => ({
  status: answer.status,
  code: answer.body.code,
  message: String(answer.body.message ?? "").replaceAll(id, "<id>"),
});

describe("isolation: another organization's ids answer as unknown ones", () => {
  let service: TestService;
  let alice: Ids;
  let mallory: Ids;
  const malloryClient = () => new DashboardClient(service.url);
  let mal: DashboardClient;

  const idsOf = async (client: DashboardClient, email: string): Promise<Ids> => {
    await client.signUp(email);
    const [membership] = (await client.ok("TeamService/ListOrganizations")).organizations as Json[];
    const organizationId = membership!.organization.id as string;
    const key = (await client.ok("AccountService/CreateKey", { name: "k" })) as Json;
    expect((await postTrace(service.url, traceBody(key.plaintext as string, { status: "error", error: "boom" }), { key: key.plaintext as string })).status).toBe(202);
    const traces = (await client.ok("QueryService/ListTraces", {})).page.traces as Json[];
    const invitation = (await client.ok("TeamService/CreateInvitation", { organizationId, email: `guest-${email}`, role: "ROLE_VIEWER" })) as Json;
    const me = (await client.ok("AuthService/GetSession")).session as Json;
    const price = (await client.ok("PriceService/CreatePrice", { spec: priceSpec })).price as Json;
    const job = (await client.ok("PriceService/StartReprice", { from: "2026-01-01T00:00:00Z" })).job as Json;
    // A webhook to a port nothing listens on, a rule sending to it, and a test event's delivery.
    const destination = (await client.ok("AlertService/CreateDestination", { kind: "ALERT_DESTINATION_KIND_WEBHOOK", url: "http://127.0.0.1:9/hook" })).destination as Json;
    const rule = (await client.ok("AlertService/CreateRule", { rule: { kind: "ALERT_KIND_UNPRICED", destinationIds: [destination.id] } })).rule as Json;
    const event = (await client.ok("AlertService/SendTestEvent", { destinationId: destination.id })).event as Json;
    return {
      project: client.project,
      organization: organizationId,
      trace: traces[0]!.id as string,
      key: key.key.id as string,
      member: me.userId as string,
      invitation: invitation.invitation.id as string,
      price: price.id as string,
      repriceJob: job.id as string,
      rule: rule.id as string,
      destination: destination.id as string,
      delivery: `${event.id}.${destination.id}`,
    };
  };

  beforeAll(async () => {
    service = await startTestService();
    alice = await idsOf(new DashboardClient(service.url), "alice@example.com");
    mal = malloryClient();
    mallory = await idsOf(mal, "mallory@example.com");
  });

  it("names every procedure of every dashboard service, and no other", () => {
    const procedures = [AuthService, QueryService, AccountService, TeamService, PriceService, AlertService].flatMap((s) => s.methods.map((m) => `/${s.typeName}/${m.name}`));
    const named = Object.entries(cases).flatMap(([service, methods]) => Object.keys(methods).map((m) => `/${service}/${m}`));
    expect(named.sort()).toEqual(procedures.sort());
    // And the server has a policy for each (a procedure without one is refused outright).
    expect(Object.keys(rpcPolicies).sort()).toEqual(procedures.sort());
  });

  const table = Object.entries(cases).flatMap(([service, methods]) =>
    Object.entries(methods).flatMap(([method, c]) => ("own" in c ? [] : [[`${service.split(".").pop()}/${method}`, c] as const])),
  );

  it.each(table)("%s", async (path, c) => {
    const foreignBody = c.foreign(alice, mallory);
    const unknownBody = c.unknown(mallory);
    const foreign = await mal.call(path, foreignBody);
    const unknown = await mal.call(path, unknownBody);
    const foreignId = Object.values(foreignBody).find((v) => typeof v === "string" && Object.values(alice).includes(v)) as string;
    expect(foreign.status, JSON.stringify(foreign.body)).not.toBe(200);
    expect(gist(foreign, foreignId)).toEqual(gist(unknown, none));
  });

  // Every REST route a read key may call, read off /openapi.json so a new one is walked here at once.
  const readRoutes = Object.entries(openApiDocument().paths as Record<string, { get?: { security?: Json[] } }>)
    .filter(([, operations]) => operations.get?.security?.some((s) => "readKey" in s))
    .map(([path]) => path);

  it("walks every read route of /openapi.json", () => {
    expect([...readRoutes].sort()).toEqual(["/v1/errors", "/v1/metrics", "/v1/runs", "/v1/runs/{id}", "/v1/traces"]);
  });

  it.each(readRoutes)(
    "read API %s: another organization's project answers as an unknown one, to a session and to a read key",
    async (route) => {
      // A well-formed run id that no project has: only the project can make the answers differ.
      const path = route.replace("{id}", encodeURIComponent("session:nobody"));
      const readKey = (await mal.ok("AccountService/CreateKey", { name: "reader", scope: "KEY_SCOPE_READ" })).plaintext as string;
      const asSession = (query: string) => mal.get(`${path}?${query}`);
      const asReadKey = (query: string) => fetch(`${service.url}${path}?${query}`, { headers: { authorization: `Bearer ${readKey}` } });
      for (const get of [asSession, asReadKey]) {
        const foreign = await get(`project=${alice.project}`);
        const unknown = await get(`project=${none}`);
        expect(foreign.status).toBe(404);
        expect((await foreign.text()).replaceAll(alice.project, "<id>")).toBe((await unknown.text()).replaceAll(none, "<id>"));
      }
    },
  );

  it.each([
    ["traces.csv", "project", (ids: Ids) => ids.project],
    ["traces.jsonl", "project", (ids: Ids) => ids.project],
    ["audit.jsonl", "organization", (ids: Ids) => ids.organization],
  ])("the download /app/export/%s: another organization's %s is as unknown as one that never existed", async (file, param, idOf) => {
    const foreign = await mal.get(`/app/export/${file}?${param}=${idOf(alice)}`);
    const unknown = await mal.get(`/app/export/${file}?${param}=${none}`);
    expect(foreign.status).toBe(404);
    expect((await foreign.text()).replaceAll(idOf(alice), "<id>")).toBe((await unknown.text()).replaceAll(none, "<id>"));
  });
});

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authFailuresPerMinute } from "../../src/limits/auth-failure-limiter.js";
import { postTrace, startTestService, traceBody, type TestService } from "../support/test-service.js";
import { projectWithKeys, readGet } from "./read-support.js";

// D12 on the read side: a read key guessed through the read API, QueryService or the download
// counts against the client's address exactly as a guessed ingest key does, and a valid key from
// that address keeps working. A service of its own: its failures must not spill into other files.
let service: TestService;
let project: Awaited<ReturnType<typeof projectWithKeys>>;

beforeAll(async () => {
  service = await startTestService();
  project = await projectWithKeys(service.store);
});
afterAll(() => service.close());

const unknownKey = "ct_unknownunknownunknownunknownunknown00";

/** One guess through each way in that takes a read key, in turn. */
const guesses = [
  () => readGet(service.url, "/v1/traces", unknownKey),
  () => readGet(service.url, "/v1/metrics", unknownKey),
  () => readGet(service.url, "/v1/errors", unknownKey),
  () => readGet(service.url, "/v1/runs", unknownKey),
  () => readGet(service.url, "/v1/runs/session:a", unknownKey),
  () => readGet(service.url, `/app/export/traces.jsonl?project=${project.projectId}`, unknownKey),
  () =>
    fetch(`${service.url}/calltrace.v1.QueryService/GetUsageTotals`, {
      method: "POST",
      headers: { authorization: `Bearer ${unknownKey}`, "content-type": "application/json" },
      body: JSON.stringify({ projectId: project.projectId }),
    }),
];

describe("guessed read keys", () => {
  it("count against the address on every read route; past the limit 429 with Retry-After, while a valid key still reads", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < authFailuresPerMinute; i++) statuses.push((await guesses[i % guesses.length]!()).status);
    expect(statuses.filter((status) => status === 401)).toHaveLength(authFailuresPerMinute);

    for (const guess of guesses) {
      const refused = await guess();
      expect(refused.status, refused.url).toBe(429);
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    }
    // The REST read routes answer the spec's 429 body.
    const body = await (await guesses[0]!()).json();
    expect(body).toEqual({ error: "Rate limit exceeded", retry_after: expect.any(Number) });
    // Ingest shares the count: a guessed ingest key from the same address is refused too.
    expect((await postTrace(service.url, traceBody(unknownKey), { key: unknownKey })).status).toBe(429);

    // A shared NAT address must not lock out honest clients (D12).
    expect((await readGet(service.url, "/v1/metrics", project.read.key)).status).toBe(200);
    // (A 503 is the store being slow on a busy machine, which a sender retries: so does this test.)
    let accepted = await postTrace(service.url, traceBody(project.ingest.key), { key: project.ingest.key });
    for (let retries = 0; accepted.status === 503 && retries < 5; retries++) {
      accepted = await postTrace(service.url, traceBody(project.ingest.key), { key: project.ingest.key });
    }
    expect(accepted.status).toBe(202);
  });
});

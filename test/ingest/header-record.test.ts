import { describe, expect, it } from "vitest";
import { HeaderRecord } from "../../src/server/header-record.js";

// The direct gRPC path hands RPC implementations HeaderRecords where connect-es hands them fetch
// Headers (D38): both must answer every operation alike.
const sorted = (headers: Headers) => [...headers].sort(([a], [b]) => a.localeCompare(b));

describe("HeaderRecord answers as fetch Headers do", () => {
  it("set, append, get, has, delete and iteration, with names in any case and values trimmed", () => {
    const record = new HeaderRecord();
    const headers = new Headers();
    for (const target of [record, headers]) {
      target.set("X-RateLimit-Limit", "1000");
      target.set("x-ratelimit-limit", " 100\t");
      target.append("Vary", "a");
      target.append("vary", "b");
      target.set("retry-after", "3");
      target.delete("Retry-After");
    }
    expect(sorted(record)).toEqual(sorted(headers));
    for (const name of ["x-ratelimit-limit", "X-RATELIMIT-LIMIT", "vary", "retry-after", "missing"]) {
      expect(record.get(name)).toBe(headers.get(name));
      expect(record.has(name)).toBe(headers.has(name));
    }
    const seen: string[] = [];
    record.forEach((value, key) => {
      seen.push(`${key}=${value}`);
    });
    expect(seen.sort()).toEqual(["vary=a, b", "x-ratelimit-limit=100"]);
    expect(record.record).toEqual({ "x-ratelimit-limit": "100", vary: "a, b" });
  });

  it("refuses the names and values fetch Headers refuse", () => {
    for (const [name, value] of [
      ["bad name", "v"],
      ["", "v"],
      ["x-ok", "line\nbreak"],
      ["x-ok", "nul\0"],
    ]) {
      expect(() => new Headers().set(name!, value!)).toThrow(TypeError);
      expect(() => new HeaderRecord().set(name!, value!)).toThrow(TypeError);
    }
  });

  it("reads a request's header record in place: pseudo-headers hidden, repeated values joined", () => {
    const request = new HeaderRecord({ ":path": "/x", ":method": "POST", authorization: "Bearer k", "x-tag": ["a", "b"] });
    expect(request.get(":path")).toBeNull();
    expect(request.get("Authorization")).toBe("Bearer k");
    expect(request.get("x-tag")).toBe("a, b");
    expect([...request.keys()].sort()).toEqual(["authorization", "x-tag"]);
    expect(request.get("toString")).toBeNull();
  });
});

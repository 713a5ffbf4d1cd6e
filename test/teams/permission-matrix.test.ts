import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { roles } from "../../src/store/team-store.js";
import { allows, leastRole, mayChangeMember, type Permission } from "../../src/teams/permissions.js";

/** docs/teams.md's matrix is the one the server enforces: each row's ticks are what `allows` answers. */
describe("the permission matrix", () => {
  const doc = readFileSync(new URL("../../docs/teams.md", import.meta.url), "utf8");
  const table = doc.slice(doc.indexOf("<!-- permission-matrix:start -->"), doc.indexOf("<!-- permission-matrix:end -->"));
  const [header, , ...rows] = table.split("\n").filter((line) => line.startsWith("|"));
  const columns = header!.split("|").slice(2, -1).map((c) => c.trim());

  it("lists the roles weakest first, and every permission once", () => {
    expect(columns).toEqual([...roles].reverse());
    const named = rows.map((row) => /\(`([a-z.]+)`\)/.exec(row)?.[1]);
    expect(named.sort()).toEqual(Object.keys(leastRole).sort());
  });

  it.each(rows.map((row) => [/\(`([a-z.]+)`\)/.exec(row)![1]!, row]))("%s", (permission, row) => {
    const ticks = row.split("|").slice(2, -1).map((c) => c.trim() === "✓");
    expect(ticks).toEqual(columns.map((role) => allows(role as (typeof roles)[number], permission as Permission)));
  });

  it("only owners make, unmake or remove owners", () => {
    expect(mayChangeMember("admin", "member", "admin")).toBe(true);
    expect(mayChangeMember("admin", "member", "owner")).toBe(false);
    expect(mayChangeMember("admin", "owner", "admin")).toBe(false);
    expect(mayChangeMember("admin", "owner", undefined)).toBe(false);
    expect(mayChangeMember("owner", "owner", "admin")).toBe(true);
    expect(mayChangeMember("member", "viewer", "member")).toBe(false);
  });
});

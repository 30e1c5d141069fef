// GET /v1/api-tokens reads its page in the list's order (docs/api.md "API tokens"): in the default
// order (created_at, then id; newest first or oldest first), the tokens are read from an index,
// never all read and sorted in a temporary B-tree, both for an admin or owner (every token) and for
// anyone else (their own); and from the index alone, which holds every listed column (a covering
// index, https://www.sqlite.org/queryplanner.html#covidx), not from each token's row. Asserted on SQLite's own query plans (https://www.sqlite.org/eqp.html)
// of the statement listApiTokens runs.
import { describe, expect, test } from "bun:test";
import { migratedDatabasePerFile, plansOf } from "../../helpers/query-plans.ts";
import { listApiTokens } from "../../../lib/auth/api-tokens.ts";

const t = migratedDatabasePerFile("roost-token-plans-");

/** SQLite's plan for the page listApiTokens reads for these options. */
async function pagePlan(createdBy: string | null, direction: "asc" | "desc"): Promise<string[]> {
  const { statements } = await plansOf(t, (db) => listApiTokens(db, { createdBy, q: undefined, sort: "created_at", direction, limit: 50, offset: 0 }));
  return statements[0]!.plan;
}

describe("the default order is read from an index, not sorted", () => {
  test.each(["desc", "asc"] as const)("every token (admin or owner), %s", async (direction) => {
    expect(await pagePlan(null, direction)).toEqual(["SCAN t USING COVERING INDEX api_tokens_created", "SEARCH u USING INDEX sqlite_autoindex_users_1 (id=?)"]);
  });

  test.each(["desc", "asc"] as const)("the caller's own tokens, %s", async (direction) => {
    const plan = await pagePlan("user-1", direction);
    expect(plan).toContain("SEARCH t USING COVERING INDEX api_tokens_creator (created_by=?)");
    expect(plan).not.toContain("USE TEMP B-TREE FOR ORDER BY");
  });
});

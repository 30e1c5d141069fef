// Build listings cost the same at a million builds as at ten (docs/api.md "Builds"): every filter
// combination either listing offers is read as one index range from the cursor down, never by
// scanning the builds table or sorting it, and totals come from counters.
// Asserted on SQLite's own query plans (https://www.sqlite.org/eqp.html) of the statements
// listBuilds runs.
import { describe, expect, test } from "bun:test";
import { migratedDatabasePerFile, plansOf } from "../../helpers/query-plans.ts";
import { listBuilds, type BuildFilter } from "../../../lib/builds/store.ts";

const t = migratedDatabasePerFile("roost-plans-");

/** The statements listBuilds runs for `filter`, each with SQLite's plan for it. */
async function plans(filter: BuildFilter): Promise<{ sql: string; plan: string[] }[]> {
  return (await plansOf(t, (db) => listBuilds(db, filter))).statements;
}

const BOUNDED =
  /^(SEARCH (builds|b) USING (COVERING )?INDEX |SEARCH b USING INTEGER PRIMARY KEY \(rowid=\?\)|SEARCH build_(branch_)?counts USING (INDEX build_(branch_)?counts_project|PRIMARY KEY)|CO-ROUTINE |MATERIALIZE |SCAN (w|\(subquery-\d+\))$)/;

const combinations: { name: string; filter: Omit<BuildFilter, "projectId" | "limit"> }[] = [];
for (const pipelineId of [undefined, "pipeline-1"])
  for (const status of [undefined, "running", "failed"] as const)
    for (const branch of [undefined, "main"])
      for (const triggerType of [undefined, "schedule"])
        combinations.push({
          name: [pipelineId ? "pipeline" : "project", status && `status=${status}`, branch && `branch=${branch}`, triggerType && `trigger_type=${triggerType}`]
            .filter(Boolean)
            .join(", "),
          filter: { pipelineId, status, branch, triggerType },
        });

describe("every filter combination is read through an index range", () => {
  test.each(combinations)("$name, with and without a cursor and total", async ({ filter }) => {
    for (const extra of [{}, { before: 500_000, withTotal: true }]) {
      const statements = await plans({ projectId: "project-1", limit: 50, ...filter, ...extra });
      for (const { sql, plan } of statements) {
        // A window of at most LIST_SCAN_BUDGET rows may be sorted again by SQLite versions that do
        // not carry its order out of the subquery (libSQL's 3.45); nothing else is ever sorted.
        const windowed = plan.some((line) => /^(CO-ROUTINE|MATERIALIZE) w$/.test(line));
        for (const line of plan) {
          if (!BOUNDED.test(line) && !(windowed && line === "USE TEMP B-TREE FOR ORDER BY")) throw new Error(`unbounded step "${line}" in: ${sql}`);
        }
        expect(plan.join("\n")).not.toMatch(/SCAN builds/);
      }
      // The total is read from counters, whatever the filters: builds are never counted.
      if ("withTotal" in extra) expect(statements.at(-1)!.plan).toEqual([expect.stringMatching(/^SEARCH build_(branch_)?counts USING /)]);
    }
  });
});

describe("several filters are checked on the index entries, not on the builds", () => {
  test.each([
    ["project: running builds of a branch", { status: "running", branch: "main" }, "builds_project_status (project_id=? AND status=? AND build_number<?)"],
    ["project: failed builds of a branch", { status: "failed", branch: "main" }, "builds_project_branch (project_id=? AND branch=? AND build_number<?)"],
    [
      "pipeline: failed manual builds",
      { pipelineId: "p", status: "failed", triggerType: "manual" },
      "builds_pipeline_status (pipeline_id=? AND status=? AND build_number<?)",
    ],
  ] as const)("%s", async (_name, filter, index) => {
    const [page] = await plans({ projectId: "project-1", limit: 50, ...filter });
    // The window of at most LIST_SCAN_BUDGET entries is read from the index alone; a build is read only when it matches.
    expect(page!.plan.filter((line) => line.startsWith("SEARCH builds"))).toEqual([
      `SEARCH builds USING ${"triggerType" in filter ? "" : "COVERING "}INDEX ${index}`,
    ]);
    expect(page!.plan).toContain("SEARCH b USING INTEGER PRIMARY KEY (rowid=?)");
  });
});

describe("each single filter has its own index, its order the listing's", () => {
  const cases: [string, Omit<BuildFilter, "projectId" | "limit">, string][] = [
    ["project", {}, "sqlite_autoindex_builds_2 (project_id=? AND build_number<?)"],
    ["project by status", { status: "running" }, "builds_project_status (project_id=? AND status=? AND build_number<?)"],
    ["project by branch", { branch: "main" }, "builds_project_branch (project_id=? AND branch=? AND build_number<?)"],
    ["project by trigger", { triggerType: "webhook" }, "builds_project_trigger (project_id=? AND trigger_kind=? AND build_number<?)"],
    ["pipeline", { pipelineId: "p" }, "builds_pipeline_number (pipeline_id=? AND build_number<?)"],
    ["pipeline by status", { pipelineId: "p", status: "queued" }, "builds_pipeline_status (pipeline_id=? AND status=? AND build_number<?)"],
    ["pipeline by branch", { pipelineId: "p", branch: "main" }, "builds_pipeline_branch (pipeline_id=? AND branch=? AND build_number<?)"],
    ["pipeline by trigger", { pipelineId: "p", triggerType: "schedule" }, "builds_pipeline_trigger (pipeline_id=? AND trigger_kind=? AND build_number<?)"],
    [
      "pipeline by branch and status",
      { pipelineId: "p", branch: "main", status: "failed" },
      "builds_pipeline_branch_status (pipeline_id=? AND branch=? AND status=? AND build_number<?)",
    ],
  ];
  test.each(cases)("%s", async (_name, filter, index) => {
    const [page] = await plans({ projectId: "project-1", limit: 50, ...filter });
    expect(page!.plan).toEqual([`SEARCH builds USING INDEX ${index}`]);
  });
});

// The lists `npm run bench -- lists` finds heaviest at a million builds (docs/benchmarks.md "Builds
// at scale"), and the one it runs beside /readyz: timed there, kept to an index range here, so
// they cannot fall back to a scan without a test failing.
describe("the bench's heaviest lists are one index range and counters", () => {
  test("include=total with branch=main: the page from builds_project_branch, the total from build_branch_counts", async () => {
    const statements = await plans({ projectId: "project-1", limit: 50, branch: "main", withTotal: true });
    expect(statements.map(({ plan }) => plan)).toEqual([
      ["SEARCH builds USING INDEX builds_project_branch (project_id=? AND branch=? AND build_number<?)"],
      [expect.stringMatching(/^SEARCH build_branch_counts USING /)],
    ]);
  });

  test("three filters (status, branch and trigger): one window of the branch's index entries, then the page's builds by rowid", async () => {
    const [page] = await plans({ projectId: "project-1", limit: 50, status: "canceled", branch: "feature/7", triggerType: "manual" });
    expect(page!.plan.filter((line) => line.startsWith("SEARCH builds"))).toEqual([
      "SEARCH builds USING INDEX builds_project_branch (project_id=? AND branch=? AND build_number<?)",
    ]);
    expect(page!.plan).toContain("SEARCH b USING INTEGER PRIMARY KEY (rowid=?)");
    expect(page!.plan.join("\n")).not.toMatch(/SCAN builds/);
  });
});

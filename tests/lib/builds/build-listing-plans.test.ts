// Build listings cost the same at a million builds as at ten (docs/api.md "Builds"): every filter
// combination either listing offers is read from the cursor down as one index range, or a merge of
// a few, sought by all its filters, never by scanning the builds table or sorting it, and totals
// come from counters.
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
  /^(SEARCH (builds|b) USING (COVERING )?INDEX |SEARCH b USING INTEGER PRIMARY KEY \(rowid=\?\)|SEARCH build_(branch_)?counts USING (INDEX build_(branch_)?counts_project|PRIMARY KEY)|CO-ROUTINE w$|SCAN w$|MERGE \(UNION ALL\)$|LEFT$|RIGHT$)/;

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

/** The index ranges a plan reads from builds: the index and the constraints of each, in order. */
function ranges(plan: string[]): { index: string; sought: string[] }[] {
  return plan
    .filter((line) => line.startsWith("SEARCH builds "))
    .map((line) => {
      const [, index, sought] = /^SEARCH builds USING (?:COVERING )?INDEX (\S+) \((.*)\)$/.exec(line)!;
      return { index: index!, sought: sought!.split(" AND ") };
    });
}

describe("every filter combination reads only the index entries of the builds it lists", () => {
  test.each(combinations)("$name, with and without a cursor and total", async ({ filter }) => {
    for (const extra of [{}, { before: 500_000, withTotal: true }]) {
      const statements = await plans({ projectId: "project-1", limit: 50, ...filter, ...extra });
      const [page] = statements;
      for (const { sql, plan } of statements) {
        for (const line of plan) if (!BOUNDED.test(line)) throw new Error(`unbounded step "${line}" in: ${sql}`);
        expect(plan.join("\n")).not.toMatch(/SCAN builds|TEMP B-TREE/);
      }
      // Each range is sought by the scope, every filter and the cursor: no entry is read to be
      // checked and passed over, so a page costs the same however many builds it skips.
      const sought = [filter.pipelineId ? "pipeline_id=?" : "project_id=?"];
      if (filter.status) sought.push("status=?");
      if (filter.branch) sought.push("branch=?");
      if (filter.triggerType) sought.push("trigger_kind=?");
      const read = ranges(page!.plan);
      expect(read.length).toBeGreaterThan(0);
      for (const range of read) expect(range.sought).toEqual(expect.arrayContaining([...sought, "build_number<?"]));
      // The total is read from counters, whatever the filters: builds are never counted.
      if ("withTotal" in extra) expect(statements.at(-1)!.plan).toEqual([expect.stringMatching(/^SEARCH build_(branch_)?counts USING /)]);
    }
  });
});

describe("each combination has its index, or merges a few ranges of one by build number", () => {
  const cases: [string, Omit<BuildFilter, "projectId" | "limit">, string, number][] = [
    ["project", {}, "sqlite_autoindex_builds_2 (project_id=? AND build_number<?)", 1],
    // A status alone: one range per trigger (four) of the trigger index (schema.sql migration 42).
    ["project by status", { status: "running" }, "builds_project_trigger (project_id=? AND trigger_kind=? AND status=? AND build_number<?)", 4],
    // A branch alone: one range per status and trigger (twenty) of the branch, status and trigger
    // index (schema.sql migration 52: every push to another branch wrote a page of an index of its own).
    [
      "project by branch",
      { branch: "main" },
      "builds_project_branch_status_trigger (project_id=? AND branch=? AND status=? AND trigger_kind=? AND build_number<?)",
      20,
    ],
    // A trigger alone: one range per status (five), merged.
    ["project by trigger", { triggerType: "webhook" }, "builds_project_trigger (project_id=? AND trigger_kind=? AND status=? AND build_number<?)", 5],
    [
      "project by status and trigger",
      { status: "failed", triggerType: "manual" },
      "builds_project_trigger (project_id=? AND trigger_kind=? AND status=? AND build_number<?)",
      1,
    ],
    // Branch and status: one range per trigger (four); branch and trigger: one per status (five).
    [
      "project by branch and status",
      { status: "failed", branch: "main" },
      "builds_project_branch_status_trigger (project_id=? AND branch=? AND status=? AND trigger_kind=? AND build_number<?)",
      4,
    ],
    [
      "project by branch and trigger",
      { branch: "main", triggerType: "manual" },
      "builds_project_branch_status_trigger (project_id=? AND branch=? AND status=? AND trigger_kind=? AND build_number<?)",
      5,
    ],
    ["pipeline", { pipelineId: "p" }, "builds_pipeline_number (pipeline_id=? AND build_number<?)", 1],
    [
      "pipeline by status",
      { pipelineId: "p", status: "queued" },
      "builds_pipeline_trigger (pipeline_id=? AND trigger_kind=? AND status=? AND build_number<?)",
      4,
    ],
    // Branch alone: one range per status and trigger (twenty) of the branch, status and trigger
    // index, which a badge and a notification's previous status read too (schema.sql migration 52).
    [
      "pipeline by branch",
      { pipelineId: "p", branch: "main" },
      "builds_pipeline_branch_status_trigger (pipeline_id=? AND branch=? AND status=? AND trigger_kind=? AND build_number<?)",
      20,
    ],
    [
      "pipeline by trigger",
      { pipelineId: "p", triggerType: "schedule" },
      "builds_pipeline_trigger (pipeline_id=? AND trigger_kind=? AND status=? AND build_number<?)",
      5,
    ],
    [
      "pipeline by status and trigger",
      { pipelineId: "p", status: "failed", triggerType: "manual" },
      "builds_pipeline_trigger (pipeline_id=? AND trigger_kind=? AND status=? AND build_number<?)",
      1,
    ],
    // Branch and status: one range per trigger (four), as at the project's scope.
    [
      "pipeline by branch and status",
      { pipelineId: "p", branch: "main", status: "failed" },
      "builds_pipeline_branch_status_trigger (pipeline_id=? AND branch=? AND status=? AND trigger_kind=? AND build_number<?)",
      4,
    ],
    [
      "pipeline by branch and trigger",
      { pipelineId: "p", branch: "main", triggerType: "rerun" },
      "builds_pipeline_branch_status_trigger (pipeline_id=? AND branch=? AND status=? AND trigger_kind=? AND build_number<?)",
      5,
    ],
    [
      "pipeline by branch, status and trigger",
      { pipelineId: "p", branch: "main", status: "failed", triggerType: "rerun" },
      "builds_pipeline_branch_status_trigger (pipeline_id=? AND branch=? AND status=? AND trigger_kind=? AND build_number<?)",
      1,
    ],
  ];
  test.each(cases)("%s", async (_name, filter, index, merged) => {
    const [page] = await plans({ projectId: "project-1", limit: 50, ...filter });
    if (merged === 1) expect(page!.plan).toEqual([`SEARCH builds USING INDEX ${index}`]);
    else {
      // Each range gives build numbers only, from the index (whose trigger_kind SQLite reads there
      // too, though its plan says INDEX, not COVERING INDEX, where the index ends with build_number);
      // the page's builds are read by rowid.
      const read = page!.plan.filter((line) => line.startsWith("SEARCH builds")).map((line) => line.replace("USING COVERING INDEX", "USING INDEX"));
      expect(read).toEqual(Array(merged).fill(`SEARCH builds USING INDEX ${index}`));
      expect(page!.plan.filter((line) => line === "MERGE (UNION ALL)")).toHaveLength(merged - 1);
      expect(page!.plan.slice(-2)).toEqual(["SCAN w", "SEARCH b USING INTEGER PRIMARY KEY (rowid=?)"]);
    }
  });
});

// The lists `npm run bench -- lists` finds heaviest at a million builds (docs/benchmarks.md "Builds
// at scale"), and the one it runs beside /readyz: timed there, kept to an index range here, so
// they cannot fall back to a scan without a test failing.
describe("the bench's heaviest lists are index ranges and counters", () => {
  test("include=total with branch=main: the page merged from builds_project_branch_status_trigger, the total from build_branch_counts", async () => {
    const [page, total] = await plans({ projectId: "project-1", limit: 50, branch: "main", withTotal: true });
    expect(page!.plan.filter((line) => line.startsWith("SEARCH builds")).map((line) => line.replace("USING COVERING INDEX", "USING INDEX"))).toEqual(
      Array(20).fill(
        "SEARCH builds USING INDEX builds_project_branch_status_trigger (project_id=? AND branch=? AND status=? AND trigger_kind=? AND build_number<?)",
      ),
    );
    expect(total!.plan).toEqual([expect.stringMatching(/^SEARCH build_branch_counts USING /)]);
  });

  test("three filters (status, branch and trigger): one range of the index holding all three", async () => {
    const [page] = await plans({ projectId: "project-1", limit: 50, status: "canceled", branch: "feature/7", triggerType: "manual" });
    expect(page!.plan).toEqual([
      "SEARCH builds USING INDEX builds_project_branch_status_trigger (project_id=? AND branch=? AND status=? AND trigger_kind=? AND build_number<?)",
    ]);
  });
});

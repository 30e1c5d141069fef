// Statements compiled once, not on every call. SQLite compiles a statement again at its first step
// after new values are bound whenever a bound value could change its plan (the sqlite3_prepare_v2
// documentation, https://www.sqlite.org/c3ref/prepare.html): a bare parameter as LIMIT or OFFSET,
// and a `column = ?` term in a join, are such values in the SQLite that Bun ships, so each call
// costs a parse and a plan (a page of API tokens took 285 µs of CPU in-process instead of 165).
// Written `+?`, the value is an expression the planner does not look at; the comparison is the
// same (neither a parameter nor `+?` has an affinity). docs/benchmarks.md, "The request path".
import { describe, expect, test } from "bun:test";
import { Glob } from "bun";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "../../..");

/**
 * Every SQL string literal (a template or double-quoted string holding SELECT/UPDATE/DELETE/INSERT)
 * of the daemon's code, with its file; a template's `${NAME}` is spelled out where NAME is a
 * string constant of the same file (`${SELECT} WHERE p.id = ?` over a SELECT that joins).
 */
async function sqlLiterals(pattern: string): Promise<{ file: string; sql: string }[]> {
  const found: { file: string; sql: string }[] = [];
  for (const file of new Glob(pattern).scanSync(ROOT)) {
    const text = await Bun.file(join(ROOT, file)).text();
    const constants = new Map([...text.matchAll(/^const ([A-Z_]+) =\s*(`[^`$]*`|"[^"\n]*");/gm)].map((m) => [m[1]!, m[2]!.slice(1, -1)]));
    for (const match of text.matchAll(/`[^`]*`|"[^"\n]*"/g)) {
      const sql = match[0].replace(/\$\{([A-Z_]+)\}/g, (whole, name: string) => constants.get(name) ?? whole).replace(/\s+/g, " ");
      if (/\b(SELECT|UPDATE|DELETE|INSERT)\b/.test(sql)) found.push({ file, sql });
    }
  }
  return found;
}

describe("statements the planner compiles once", () => {
  test("no statement binds LIMIT or OFFSET as a bare parameter", async () => {
    const bare = (await sqlLiterals("{lib,handlers}/**/*.ts")).filter(({ sql }) => /\b(LIMIT|OFFSET) (\?|:\w+)/.test(sql));
    expect(bare).toEqual([]);
  });

  // A bare parameter beside an ORDER BY too (20 against 5 µs for a project's variables, 35 against
  // 6 for the cache a job restores; docs/benchmarks.md, "The runner fleet's CPU per job: its reads").
  // The values an UPDATE's SET assigns are not compared with anything and cost nothing (a claim of a
  // deployment 3.4 against 3.3 µs with `+?`), so its assignments up to WHERE are left out.
  test("no statement orders rows beside a bare `= ?`", async () => {
    const ordered = (await sqlLiterals("{lib,handlers}/**/*.ts")).filter(({ sql }) => /\bORDER BY\b/.test(sql));
    expect(ordered.length).toBeGreaterThan(50);
    const bare = ordered.filter(({ sql }) => /(?<![!<>=])=\s*(\?|:\w+)|\bWHEN \?/.test(sql.replace(/\bSET\b[^()]*?(?=\bWHERE\b)/g, "SET")));
    expect(bare).toEqual([]);
  });

  test("no join is filtered by a bare `= ?`", async () => {
    const joins = (await sqlLiterals("{lib,handlers}/**/*.ts")).filter(({ sql }) => /\bJOIN\b/.test(sql) && /(?<![!<>=])=\s*(\?|:\w+)/.test(sql));
    expect(joins).toEqual([]);
  });
});

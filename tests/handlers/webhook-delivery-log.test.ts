// A project's webhook delivery log (docs/webhooks.md "The delivery log"): paged by cursor, newest
// first, so deliveries that arrive while a client pages neither repeat one nor skip one; and a
// delivery's body is read only for a caller allowed to see it.
import { describe, expect, test } from "bun:test";
import { userWithRole, type TestApp } from "../helpers/app.ts";
import { createPipeline, fixturePerFile, signedAcmePush, startCiFixture } from "../helpers/ci.ts";
import { recordingDb } from "../helpers/recording-db.ts";
import { createApp } from "../../lib/http/app.ts";
import { createLive } from "../../lib/live/live.ts";
import { routes } from "../../handlers/routes.ts";
import { INLINE_BODY_BYTES } from "../../lib/webhooks/delivery-bodies.ts";
import { listDeliveries } from "../../lib/webhooks/deliveries.ts";
import { all } from "../../lib/db/client.ts";

let t: TestApp, owner: string, projectId: string;
fixturePerFile(startCiFixture, (fixture) => ({ t, owner, projectId } = fixture));

let pushes = 0;
/** A signed push of a new commit to `branch` (main builds, anything else is ignored); the id of its record in the log. */
async function push(branch: string, message = "a commit"): Promise<string> {
  pushes++;
  const sha = pushes.toString(16).padStart(40, "0");
  const p = await signedAcmePush(branch, sha, `delivery-${pushes}`, message);
  const res = await t.call("POST", "/v1/webhooks/github", { raw: p.body, contentType: "application/json", headers: p.headers, peer: "140.82.112.1" });
  expect(res.status).toBe(200);
  return res.body.delivery_id;
}

const log = (query: string) => t.call("GET", `/v1/projects/${projectId}/webhook-deliveries?${query}`, { token: owner });

/** Every page of the log from the first, as `query` filters it, sending `meanwhile` after each page; the ids listed, in order. */
async function walk(query: string, meanwhile: () => Promise<unknown>): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const page = await log(`${query}${cursor ? `&cursor=${cursor}` : ""}`);
    expect(page.status).toBe(200);
    expect(page.body).not.toHaveProperty("total");
    ids.push(...page.body.deliveries.map((d: { id: string }) => d.id));
    cursor = page.body.next_cursor;
    await meanwhile();
  } while (cursor !== null);
  return ids;
}

describe("the delivery log is paged by cursor", () => {
  test("every delivery once, newest first, while new ones arrive; a filter pages the same way", async () => {
    await createPipeline(t, owner, projectId, { name: "main", trigger_config: { events: ["push"], branches: ["main"] } });
    // Deliveries of one second and of the next: a page may end between two of the same second.
    const sent: { id: string; result: string }[] = [];
    for (let i = 0; i < 8; i++) {
      if (i === 5) t.clock.advance(1);
      const branch = i % 3 === 0 ? "main" : `feature-${i}`;
      sent.push({ id: await push(branch), result: branch === "main" ? "built" : "ignored" });
    }
    const newestFirst = sent.toReversed();

    t.clock.advance(1);
    const arrived: string[] = [];
    expect(await walk("limit=3", async () => arrived.push(await push("feature-new")))).toEqual(newestFirst.map((d) => d.id));
    // Those that arrived during the first walk are ignored ones too: the second starts with them.
    const ignored = [...arrived.toReversed(), ...newestFirst.filter((d) => d.result === "ignored").map((d) => d.id)];
    expect(await walk("limit=2&result=ignored", async () => arrived.push(await push("feature-new")))).toEqual(ignored);

    // Those that arrived meanwhile head the log's first page, newest first.
    const first = await log("limit=200");
    expect(first.body.deliveries.map((d: { id: string }) => d.id)).toEqual([...arrived.toReversed(), ...newestFirst.map((d) => d.id)]);
    expect(first.body.next_cursor).toBeNull();
  });

  test("a cursor the API did not give out, or another listing's, or an offset, is 400 invalid_request", async () => {
    const builds = Buffer.from("b7").toString("base64url");
    for (const cursor of [
      "not-a-cursor",
      Buffer.from("p0.1").toString("base64url"),
      Buffer.from("p1800000000").toString("base64url"),
      Buffer.from("d1800000000.42").toString("base64url"),
      builds,
    ]) {
      const res = await log(`cursor=${cursor}`);
      expect({ status: res.status, body: res.body }).toEqual({
        status: 400,
        body: {
          code: "invalid_request",
          message: "The query is not valid: query.cursor: is not a cursor from this listing (use next_cursor as given)",
          details: [{ path: "query.cursor", message: "is not a cursor from this listing (use next_cursor as given)" }],
        },
      });
    }
    const offset = await log("offset=3");
    expect(offset.status).toBe(400);
    expect(offset.body.code).toBe("invalid_request");
    expect(JSON.stringify(offset.body.details)).toContain("offset");
  });
});

describe("a cursor outlives a VACUUM and a rebuild of the table", () => {
  // "The VACUUM command may change the ROWIDs of entries in any tables that do not have an explicit
  // INTEGER PRIMARY KEY" (https://www.sqlite.org/lang_vacuum.html); webhook_deliveries has none (its
  // key is the TEXT id). The SQLite here keeps a table's rowids through VACUUM while the table has an
  // index, which it does not promise; a rebuild of the table, as schema.sql's migrations and
  // https://www.sqlite.org/lang_altertable.html#otheralter make one (copy out, drop, create, copy
  // back), numbers the rows again from 1, closing the gaps deleted deliveries left.
  async function vacuumAndRebuild(): Promise<void> {
    // A libSQL server refuses a VACUUM from a client (SQL_PARSE_ERROR); the rebuild runs on both.
    if (t.config.databaseUrl.startsWith("file:")) await t.db.execute("VACUUM");
    const table = await all(t.db, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'webhook_deliveries'");
    const dependents = await all(
      t.db,
      "SELECT sql FROM sqlite_master WHERE tbl_name = 'webhook_deliveries' AND type IN ('index', 'trigger') AND sql IS NOT NULL",
    );
    await t.db.batch(
      [
        "CREATE TABLE webhook_deliveries_copy AS SELECT * FROM webhook_deliveries",
        "DROP TABLE webhook_deliveries",
        String(table[0]!.sql),
        "INSERT INTO webhook_deliveries SELECT * FROM webhook_deliveries_copy",
        "DROP TABLE webhook_deliveries_copy",
        ...dependents.map((row) => String(row.sql)),
      ].map((sql) => ({ sql, args: [] })),
      "write",
    );
  }

  test("the pages after it, from a cursor given before it, list every delivery once", async () => {
    t.clock.advance(1);
    const gone = [await push("vacuum-gone-1"), await push("vacuum-gone-2"), await push("vacuum-gone-3")];
    t.clock.advance(1);
    for (let i = 0; i < 6; i++) await push(`vacuum-kept-${i}`);
    // Deleted as retention deletes old deliveries: the gap they leave is what a rebuild closes.
    await t.db.execute({ sql: `DELETE FROM webhook_deliveries WHERE id IN (${gone.map(() => "?").join(", ")})`, args: gone });
    const whole = (await log("limit=200")).body.deliveries.map((d: { id: string }) => d.id);

    const first = await log("limit=2");
    await vacuumAndRebuild();
    const ids: string[] = first.body.deliveries.map((d: { id: string }) => d.id);
    let cursor: string | null = first.body.next_cursor;
    while (cursor !== null) {
      const page = await log(`limit=2&cursor=${cursor}`);
      expect(page.status).toBe(200);
      ids.push(...page.body.deliveries.map((d: { id: string }) => d.id));
      cursor = page.body.next_cursor;
    }
    expect(ids).toEqual(whole);
  });
});

describe("the admin log (GET /v1/webhook-deliveries) is paged by cursor too", () => {
  const adminLog = (query: string) => t.call("GET", `/v1/webhook-deliveries?${query}`, { token: owner });

  test("every delivery once, newest first, while new ones arrive; no total is counted; an offset or another listing's cursor is 400", async () => {
    t.clock.advance(1);
    for (let i = 0; i < 5; i++) await push(`admin-${i}`);
    const whole = (await adminLog("limit=200")).body;
    expect(whole).not.toHaveProperty("total");
    expect(whole.next_cursor).toBeNull();
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await adminLog(`limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      expect(page.status).toBe(200);
      ids.push(...page.body.deliveries.map((d: { id: string }) => d.id));
      cursor = page.body.next_cursor;
      await push("admin-meanwhile");
    } while (cursor !== null);
    expect(ids).toEqual(whole.deliveries.map((d: { id: string }) => d.id));

    const projectCursor = (await log("limit=1")).body.next_cursor;
    for (const query of ["offset=2", `cursor=${projectCursor}`]) expect((await adminLog(query)).body.code).toBe("invalid_request");
  });

  test("a page filtered by result reads a bounded stretch of the log, and its cursor goes on below it", async () => {
    // Newest first: three ignored, then one built (main builds once a pipeline takes it), then two ignored.
    await createPipeline(t, owner, projectId, { name: "window", trigger_config: { events: ["push"], branches: ["main"] } });
    t.clock.advance(1);
    const older = [await push("w-old-1"), await push("w-old-2")];
    const built = await push("main");
    const newer = [await push("w-new-1"), await push("w-new-2"), await push("w-new-3")];

    // A window of 3: the first page reads the three newest, none built, and says where to go on.
    const first = await listDeliveries(t.db, { limit: 10, result: "built" }, 3);
    expect(first.deliveries).toEqual([]);
    expect(first.nextBefore).not.toBeNull();
    // It says how far back it looked: the oldest of the three it read.
    const oldestRead = (await t.call("GET", `/v1/webhook-deliveries/${newer[0]}`, { token: owner })).body.delivery.received_at;
    expect(first.searchedBackTo).toBe(oldestRead);
    const second = await listDeliveries(t.db, { limit: 10, result: "built", before: first.nextBefore! }, 3);
    expect(second.deliveries.map((d) => d.id)).toEqual([built]);
    // A full page stopped at its last delivery, not at the window's end: it says nothing of a search.
    expect((await listDeliveries(t.db, { limit: 1, result: "ignored" }, 3)).searchedBackTo).toBeNull();
    const ignored = await listDeliveries(t.db, { limit: 10, result: "ignored" }, 3);
    expect(ignored.deliveries.map((d) => d.id)).toEqual(newer.toReversed());
    const rest = await listDeliveries(t.db, { limit: 10, result: "ignored", before: ignored.nextBefore! }, 3);
    expect(rest.deliveries.map((d) => d.id).slice(0, 2)).toEqual(older.toReversed());

    // Through the API (a window of 5,000, longer than this log): the log ends before it, so the search went all the way.
    const page = await adminLog("result=built&limit=100");
    expect({ searched_back_to: page.body.searched_back_to, next_cursor: page.body.next_cursor }).toEqual({ searched_back_to: null, next_cursor: null });
  });
});

describe("a delivery's body is read only for a caller allowed to see the delivery", () => {
  test("a project viewer (403) and a stranger (404) have none of it read; its maintainer reads it whole", async () => {
    // Over INLINE_BODY_BYTES: kept compressed in pieces (webhook_delivery_bodies), read back and decompressed.
    const id = await push("feature-big", "x".repeat(INLINE_BODY_BYTES + 1024));
    const viewer = await userWithRole(t, owner, "developer");
    await t.call("PUT", `/v1/projects/${projectId}/members/${viewer.id}`, { token: owner, body: { role: "viewer" } });
    const stranger = await userWithRole(t, owner, "developer");

    for (const [token, status, code] of [
      [viewer.token, 403, "forbidden"],
      [stranger.token, 404, "not_found"],
      [owner, 200, null],
    ] as const) {
      const seen: string[] = [];
      const db = recordingDb(t.db, (sql) => seen.push(sql.replace(/\s+/g, " ")));
      const app = createApp({ ...t.ctx, db, live: createLive({ db, events: t.ctx.events }) }, routes);
      const res = await app.fetch(
        new Request(`http://127.0.0.1:8080/v1/webhook-deliveries/${id}`, { headers: { host: "127.0.0.1:8080", authorization: `Bearer ${token}` } }),
        "127.0.0.1",
      );
      const body = (await res.json()) as { code?: string; delivery?: { body: string } };
      expect(res.status).toBe(status);
      const bodyRead = seen.filter((sql) => /webhook_delivery_bodies|SELECT \* FROM webhook_deliveries|SELECT body\b/.test(sql));
      if (code === null) {
        expect(body.delivery!.body.length).toBeGreaterThan(INLINE_BODY_BYTES);
        expect(bodyRead.length).toBeGreaterThan(0);
      } else {
        expect(body.code).toBe(code);
        expect(bodyRead).toEqual([]);
      }
    }
  });
});

// Operator incidents (docs/api.md "Operator incidents").
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { appWithOwner, type TestApp } from "../helpers/app.ts";
import { raiseIncident, resolveIncident } from "../../lib/daemon/incidents.ts";

let t: TestApp;
let owner: string;
beforeEach(async () => ({ t, owner } = await appWithOwner()));
afterEach(() => t.close());

const input = {
  severity: "warning" as const,
  reason: "no_runner_for_platform",
  message: "no macOS runner",
  resource_kind: "pipeline",
  resource_id: "p1",
  resource_name: "iOS",
};

describe("operator incidents", () => {
  test("are deduplicated per resource and reason while open, counting occurrences", async () => {
    const first = await raiseIncident(t.db, 100, input);
    const second = await raiseIncident(t.db, 160, { ...input, message: "still no macOS runner" });
    expect(second.id).toBe(first.id);
    expect(second).toMatchObject({
      occurrence_count: 2,
      first_occurrence_at: 100,
      latest_occurrence_at: 160,
      message: "still no macOS runner",
      status: "open",
    });
    const other = await raiseIncident(t.db, 170, { ...input, resource_id: "p2" });
    expect(other.id).not.toBe(first.id);
    const listed = await t.call("GET", "/v1/operator-incidents", { token: owner });
    expect(listed.body.total).toBe(2);
    expect(listed.body.incidents[0].id).toBe(other.id);
  });

  test("read sets read_at and returns the incident; a new occurrence makes it unread again", async () => {
    const incident = await raiseIncident(t.db, 100, input);
    const res = await t.call("POST", `/v1/operator-incidents/${incident.id}/read`, { token: owner });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...incident, read_at: t.clock.now() });
    expect((await t.call("GET", "/v1/operator-incidents?unread=true", { token: owner })).body.total).toBe(0);
    await raiseIncident(t.db, 200, input);
    expect((await t.call("GET", "/v1/operator-incidents?unread=true", { token: owner })).body.total).toBe(1);
  });

  test("a resolved incident stays for the record; the next occurrence opens a new one", async () => {
    const incident = await raiseIncident(t.db, 100, input);
    await resolveIncident(t.db, 150, "pipeline", "p1", "no_runner_for_platform");
    const fresh = await raiseIncident(t.db, 200, input);
    expect(fresh.id).not.toBe(incident.id);
    expect((await t.call("GET", "/v1/operator-incidents?status=resolved", { token: owner })).body.incidents[0]).toMatchObject({
      id: incident.id,
      resolved_at: 150,
    });
  });

  test("an unknown incident is 404", async () => {
    const res = await t.call("POST", "/v1/operator-incidents/nope/read", { token: owner });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ code: "not_found", message: "No incident with that id." });
  });
});

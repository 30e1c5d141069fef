// User management (docs/api.md "Users"): invite, list, change role, deactivate.
import { beforeEach, describe, expect, test } from "bun:test";
import { bootstrapOwner, expectError, loginCapability, testAppPer, userWithRole } from "../helpers/app.ts";

const t = testAppPer("test");
let owner: string, ownerId: string;
beforeEach(async () => {
  owner = await bootstrapOwner(t);
  ownerId = (await t.call("GET", "/v1/users/me", { token: owner })).body.user.id;
});
const setRole = (token: string, userId: string, role: string) => t.call("PATCH", `/v1/users/${userId}`, { token, body: { role } });

describe("inviting", () => {
  test("an admin invites a user, who can then sign in", async () => {
    const res = await t.call("POST", "/v1/users", { token: owner, body: { email: "New@Example.test", role: "maintainer" } });
    expect(res.status).toBe(201);
    expect(res.body.user).toMatchObject({ email: "new@example.test", role: "maintainer", active: true, oidc_subject: null, deactivated_at: null });
    const login = await t.call("POST", "/v1/auth/local/login", { body: { email: "new@example.test", recovery_capability: await loginCapability(t) } });
    expect(login.status).toBe(200);
    expect(login.body.user.role).toBe("maintainer");
  });

  test("inviting an existing e-mail is 409 user_exists", async () => {
    await t.call("POST", "/v1/users", { token: owner, body: { email: "dup@example.test", role: "developer" } });
    const res = await t.call("POST", "/v1/users", { token: owner, body: { email: "DUP@example.test", role: "developer" } });
    expectError(res, 409, { code: "user_exists", message: "A user with that e-mail already exists." });
  });

  test("an admin cannot invite an owner", async () => {
    const admin = await userWithRole(t, owner, "admin");
    const res = await t.call("POST", "/v1/users", { token: admin.token, body: { email: "o2@example.test", role: "owner" } });
    expectError(res, 403, { code: "role_not_allowed", message: "You cannot grant owner, which is above your own role." });
  });

  test.each(["maintainer", "developer"])("a %s cannot invite anyone (403 forbidden)", async (role) => {
    const user = await userWithRole(t, owner, role);
    const res = await t.call("POST", "/v1/users", { token: user.token, body: { email: "x@example.test", role: "developer" } });
    expectError(res, 403, { code: "forbidden", message: "This endpoint needs the admin role or higher." });
  });

  test("an invalid e-mail is 400 with the field path", async () => {
    const res = await t.call("POST", "/v1/users", { token: owner, body: { email: "not-an-email", role: "developer" } });
    expect(res.status).toBe(400);
    expect(res.body.details[0].path).toBe("body.email");
  });
});

describe("listing", () => {
  test("lists active users with a total; include_inactive adds deactivated ones", async () => {
    const dev = await userWithRole(t, owner, "developer");
    await t.call("DELETE", `/v1/users/${dev.id}`, { token: owner });
    const active = await t.call("GET", "/v1/users", { token: owner });
    expect(active.body.total).toBe(1);
    const all = await t.call("GET", "/v1/users?include_inactive=true", { token: owner });
    expect(all.body.total).toBe(2);
    expect(all.body.users.find((u: { id: string }) => u.id === dev.id).active).toBe(false);
  });

  test("GET /v1/users/me works for every role", async () => {
    const dev = await userWithRole(t, owner, "developer");
    const res = await t.call("GET", "/v1/users/me", { token: dev.token });
    expect(res.status).toBe(200);
    expect(res.body.user).toMatchObject({ id: dev.id, email: dev.email, role: "developer" });
    expect(res.body.credential.kind).toBe("session");
  });
});

describe("changing role and deactivating", () => {
  test("a role change ends the user's sessions so it takes effect at once", async () => {
    const admin = await userWithRole(t, owner, "admin");
    const res = await setRole(owner, admin.id, "developer");
    expect(res.status).toBe(200);
    expect(res.body.user.role).toBe("developer");
    const old = await t.call("GET", "/v1/users", { token: admin.token });
    expect(old.status).toBe(401);
    expect(old.body.code).toBe("invalid_session");
  });

  test("an admin cannot change an owner, nor grant owner", async () => {
    const admin = await userWithRole(t, owner, "admin");
    const demote = await setRole(admin.token, ownerId, "developer");
    expectError(demote, 403, { code: "forbidden", message: "You cannot change a user whose role is above yours." });
    const dev = await userWithRole(t, owner, "developer");
    const promote = await setRole(admin.token, dev.id, "owner");
    expect(promote.status).toBe(403);
    expect(promote.body.code).toBe("role_not_allowed");
  });

  test("the last owner cannot be demoted or deactivated", async () => {
    const demote = await setRole(owner, ownerId, "admin");
    expectError(demote, 409, { code: "last_owner", message: "The last owner cannot be demoted or deactivated; make someone else owner first." });
    const remove = await t.call("DELETE", `/v1/users/${ownerId}`, { token: owner });
    expect(remove.body.code).toBe("last_owner");
  });

  test("with a second owner, the first can step down", async () => {
    const second = await userWithRole(t, owner, "owner");
    const res = await setRole(second.token, ownerId, "admin");
    expect(res.status).toBe(200);
    expect(res.body.user.role).toBe("admin");
  });

  test("deactivation ends sessions, and reactivation lets the user sign in again", async () => {
    const dev = await userWithRole(t, owner, "developer");
    const res = await t.call("DELETE", `/v1/users/${dev.id}`, { token: owner });
    expect(res.status).toBe(200);
    expect(res.body.user).toMatchObject({ active: false, deactivated_at: t.clock.now() });
    expect((await t.call("GET", "/v1/users/me", { token: dev.token })).status).toBe(401);
    await t.call("PATCH", `/v1/users/${dev.id}`, { token: owner, body: { active: true } });
    expect((await t.call("POST", "/v1/auth/local/login", { body: { email: dev.email, recovery_capability: await loginCapability(t) } })).status).toBe(200);
  });

  test("an unknown user id is 404 not_found; an empty change is 400", async () => {
    const missing = await t.call("PATCH", "/v1/users/nope", { token: owner, body: { role: "developer" } });
    expectError(missing, 404, { code: "not_found", message: "No user with that id." });
    const empty = await t.call("PATCH", "/v1/users/nope", { token: owner, body: {} });
    expect(empty.status).toBe(400);
  });
});

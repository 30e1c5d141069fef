// Operator commands that work on the database directly (`roost user …`, `roost token …`), so an
// instance can be managed without the API: with the daemon stopped, or from a shell on the host.
// Writes go through the same data-layer functions as the API and respect the same rules (the
// last owner stays an owner). Whoever can run them can read the database anyway.
import type { Db } from "../db/client.ts";
import { RoleSchema, type Role } from "../auth/roles.ts";
import { findUserByEmail, insertUser, listUsers, normalizeEmail } from "../db/users.ts";
import { findApiToken, listApiTokens, revokeApiToken } from "../db/api-tokens.ts";
import { changeUser } from "../user-admin.ts";
import type { Principal } from "../auth/principal.ts";
import { ApiError } from "../errors.ts";
import { Email } from "../schemas.ts";

export interface CliResult {
  code: number;
  out: string;
}

const now = () => Math.floor(Date.now() / 1000);

/** The operator at the host acts with the owner's authority. */
const HOST_OPERATOR: Principal = {
  kind: "session",
  user: { id: "host-operator", email: "host-operator", role: "owner", active: true, oidc_issuer: null, oidc_subject: null, avatar_url: "", invited_by: null, created_at: 0, updated_at: 0, deactivated_at: null },
  role: "owner",
  sessionId: null,
  tokenId: null,
  credentialExpiresAt: Number.MAX_SAFE_INTEGER,
};

export const USER_USAGE = "usage: roost user list | invite <email> [--role owner|admin|maintainer|developer] | set-role <email> <role> | deactivate <email> | reactivate <email>";
export const TOKEN_USAGE = "usage: roost token list | revoke <token_id>";

export async function runAdminCommand(db: Db, group: "user" | "token", args: string[]): Promise<CliResult> {
  try {
    return group === "user" ? await userCommand(db, args) : await tokenCommand(db, args);
  } catch (error) {
    if (error instanceof ApiError) return { code: 1, out: `${error.code}: ${error.message}` };
    throw error;
  }
}

function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
}

async function userCommand(db: Db, args: string[]): Promise<CliResult> {
  const [action, subject] = args;
  switch (action) {
    case "list": {
      const page = await listUsers(db, { q: undefined, includeInactive: true, limit: 200, offset: 0 });
      return { code: 0, out: page.users.map((u) => `${u.id}\t${u.email}\t${u.role}\t${u.active ? "active" : "deactivated"}`).join("\n") };
    }
    case "invite": {
      const email = Email.safeParse(subject ?? "");
      const role = RoleSchema.safeParse(flag(args, "role") ?? "developer");
      if (!email.success || !role.success) return { code: 2, out: USER_USAGE };
      if (await findUserByEmail(db, email.data)) return { code: 1, out: `user_exists: ${normalizeEmail(email.data)} already exists` };
      const user = await insertUser(db, { email: email.data, role: role.data, invitedBy: null, now: now() });
      return { code: 0, out: `${user.id}\t${user.email}\t${user.role}` };
    }
    case "set-role":
    case "deactivate":
    case "reactivate": {
      let change: { role?: Role; active?: boolean } = { active: action === "reactivate" };
      if (action === "set-role") {
        const role = RoleSchema.safeParse(args[2]);
        if (!role.success) return { code: 2, out: USER_USAGE };
        change = { role: role.data };
      }
      const user = subject ? await findUserByEmail(db, subject) : null;
      if (!user) return { code: 1, out: `user_not_found: no user ${subject ?? ""}` };
      const updated = await changeUser(db, HOST_OPERATOR, user.id, change, now());
      return { code: 0, out: `${updated.id}\t${updated.email}\t${updated.role}\t${updated.active ? "active" : "deactivated"}` };
    }
    default:
      return { code: 2, out: USER_USAGE };
  }
}

async function tokenCommand(db: Db, args: string[]): Promise<CliResult> {
  const [action, subject] = args;
  switch (action) {
    case "list": {
      const page = await listApiTokens(db, { createdBy: null, q: undefined, sort: "created_at", direction: "desc", limit: 200, offset: 0 });
      const t = now();
      return {
        code: 0,
        out: page.rows.map((r) => `${r.id}\t${r.name}\t${r.role}\t${r.created_by_email}\t${r.revoked_at ? "revoked" : r.expires_at <= t ? "expired" : "active"}`).join("\n"),
      };
    }
    case "revoke": {
      const token = subject ? await findApiToken(db, subject) : null;
      if (!token) return { code: 1, out: `token_not_found: no API token ${subject ?? ""}` };
      await revokeApiToken(db, token.id, now());
      return { code: 0, out: `revoked ${token.id}` };
    }
    default:
      return { code: 2, out: TOKEN_USAGE };
  }
}

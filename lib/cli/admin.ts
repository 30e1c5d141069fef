// Operator commands that work on the database directly (`roost user …`, `roost token …`), so an
// instance can be managed without the API: with the daemon stopped, or from a shell on the host.
// Writes go through the same data-layer functions as the API and respect the same rules (the
// last owner stays an owner). Whoever can run them can read the database anyway.
import type { Db } from "../db/client.ts";
import { RoleSchema, type Role } from "../auth/roles.ts";
import { findUserByEmail, insertUser, listUsers, normalizeEmail } from "../auth/users.ts";
import { findApiToken, listApiTokens, revokeApiToken } from "../auth/api-tokens.ts";
import { changeUser } from "../auth/user-admin.ts";
import type { Principal } from "../auth/principal.ts";
import { ApiError } from "../http/errors.ts";
import { Email } from "../schemas/shared.ts";
import { UsageError, parseCommandArgs } from "./args.ts";

export interface CliResult {
  code: number;
  out: string;
}

const now = () => Math.floor(Date.now() / 1000);

/** The operator at the host acts with the owner's authority. */
const HOST_OPERATOR: Principal = {
  kind: "session",
  user: {
    id: "host-operator",
    email: "host-operator",
    role: "owner",
    active: true,
    oidc_issuer: null,
    oidc_subject: null,
    avatar_url: "",
    invited_by: null,
    created_at: 0,
    updated_at: 0,
    deactivated_at: null,
  },
  role: "owner",
  sessionId: null,
  tokenId: null,
  credentialExpiresAt: Number.MAX_SAFE_INTEGER,
};

export type AdminCommand =
  | { group: "user"; action: "list" }
  | { group: "user"; action: "invite"; email: string; role: Role }
  | { group: "user"; action: "set-role"; email: string; role: Role }
  | { group: "user"; action: "deactivate" | "reactivate"; email: string }
  | { group: "token"; action: "list" }
  | { group: "token"; action: "revoke"; tokenId: string };

const USER_ACTIONS = ["list", "invite", "set-role", "deactivate", "reactivate"] as const;
const TOKEN_ACTIONS = ["list", "revoke"] as const;

/**
 * Reads `roost user …` / `roost token …` before anything is opened: a usage error (exit 2, one
 * line naming the option or argument) leaves the database untouched.
 */
export function parseAdminCommand(group: "user" | "token", args: string[]): AdminCommand {
  const [action, ...rest] = args;
  const actions: readonly string[] = group === "user" ? USER_ACTIONS : TOKEN_ACTIONS;
  if (action === undefined || action.startsWith("-")) {
    throw new UsageError(`roost ${group}: missing action (${actions.join(", ")}); see 'roost ${group} --help'`);
  }
  if (!actions.includes(action)) {
    throw new UsageError(`roost ${group}: unknown action '${action}' (${actions.join(", ")}); see 'roost ${group} --help'`);
  }
  const command = `roost ${group} ${action}`;
  switch (action) {
    case "list":
      parseCommandArgs(command, rest, {});
      return group === "user" ? { group, action } : { group: "token", action };
    case "invite": {
      const { values, positionals } = parseCommandArgs(command, rest, { role: { type: "string" } }, ["<email>"]);
      return { group: "user", action, email: email(command, positionals[0]!), role: role(command, "--role", values.role ?? "developer") };
    }
    case "set-role": {
      const { positionals } = parseCommandArgs(command, rest, {}, ["<email>", "<role>"]);
      return { group: "user", action, email: email(command, positionals[0]!), role: role(command, "<role>", positionals[1]!) };
    }
    case "deactivate":
    case "reactivate": {
      const { positionals } = parseCommandArgs(command, rest, {}, ["<email>"]);
      return { group: "user", action, email: email(command, positionals[0]!) };
    }
    default: {
      const { positionals } = parseCommandArgs(command, rest, {}, ["<token_id>"]);
      return { group: "token", action: "revoke", tokenId: positionals[0]! };
    }
  }
}

function email(command: string, value: string): string {
  const parsed = Email.safeParse(value);
  if (!parsed.success) throw new UsageError(`${command}: '${value}' is not an e-mail address`);
  return parsed.data;
}

function role(command: string, name: string, value: unknown): Role {
  const parsed = RoleSchema.safeParse(value);
  if (!parsed.success) throw new UsageError(`${command}: ${name} must be one of ${RoleSchema.options.join(", ")}, not '${String(value)}'`);
  return parsed.data;
}

export async function runAdminCommand(db: Db, command: AdminCommand): Promise<CliResult> {
  try {
    return command.group === "user" ? await userCommand(db, command) : await tokenCommand(db, command);
  } catch (error) {
    if (error instanceof ApiError) return { code: 1, out: `${error.code}: ${error.message}` };
    throw error;
  }
}

async function userCommand(db: Db, command: Extract<AdminCommand, { group: "user" }>): Promise<CliResult> {
  switch (command.action) {
    case "list": {
      const page = await listUsers(db, { q: undefined, includeInactive: true, limit: 200, offset: 0 });
      return { code: 0, out: page.users.map((u) => `${u.id}\t${u.email}\t${u.role}\t${u.active ? "active" : "deactivated"}`).join("\n") };
    }
    case "invite": {
      if (await findUserByEmail(db, command.email)) return { code: 1, out: `user_exists: ${normalizeEmail(command.email)} already exists` };
      const user = await insertUser(db, { email: command.email, role: command.role, invitedBy: null, now: now() });
      return { code: 0, out: `${user.id}\t${user.email}\t${user.role}` };
    }
    default: {
      const change = command.action === "set-role" ? { role: command.role } : { active: command.action === "reactivate" };
      const user = await findUserByEmail(db, command.email);
      if (!user) return { code: 1, out: `user_not_found: no user ${command.email}` };
      const updated = await changeUser(db, HOST_OPERATOR, user.id, change, now());
      return { code: 0, out: `${updated.id}\t${updated.email}\t${updated.role}\t${updated.active ? "active" : "deactivated"}` };
    }
  }
}

async function tokenCommand(db: Db, command: Extract<AdminCommand, { group: "token" }>): Promise<CliResult> {
  if (command.action === "list") {
    const page = await listApiTokens(db, { createdBy: null, q: undefined, sort: "created_at", direction: "desc", limit: 200, offset: 0 });
    const t = now();
    return {
      code: 0,
      out: page.rows
        .map((r) => `${r.id}\t${r.name}\t${r.role}\t${r.created_by_email}\t${r.revoked_at ? "revoked" : r.expires_at <= t ? "expired" : "active"}`)
        .join("\n"),
    };
  }
  const token = await findApiToken(db, command.tokenId);
  if (!token) return { code: 1, out: `token_not_found: no API token ${command.tokenId}` };
  await revokeApiToken(db, token.id, now());
  return { code: 0, out: `revoked ${token.id}` };
}

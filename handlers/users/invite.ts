// POST /v1/users (admin): invites a user by e-mail. Users must be invited before any login works;
// nobody invites above their own role (docs/authorization.md "Roles").
import { z } from "zod";
import { created, defineEndpoint } from "../../lib/http/route.ts";
import type { UserContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { Email, UserResource } from "../../lib/schemas/shared.ts";
import { RoleSchema, roleAtLeast } from "../../lib/auth/roles.ts";
import { findUserByEmail, insertUser, toUserResource } from "../../lib/auth/users.ts";

export const InviteBody = z.object({ email: Email, role: RoleSchema }).strict();

export const endpoint = defineEndpoint({
  operationId: "invite_user",
  summary: "Invite a user",
  authNote: "nobody invites above their own role",
  body: InviteBody,
  ...created({ user: UserResource }),
  errors: ["role_not_allowed", "user_exists"],
  async handle({ body }, ctx: UserContext) {
    const caller = ctx.principal;
    if (!roleAtLeast(caller.role, body.role)) fail("role_not_allowed", `You cannot grant ${body.role}, which is above your own role.`);
    const existing = await findUserByEmail(ctx.db, body.email);
    if (existing) {
      fail(
        "user_exists",
        existing.active ? "A user with that e-mail already exists." : "That user exists but is deactivated; reactivate them with PATCH /v1/users/{user_id}.",
      );
    }
    const user = await insertUser(ctx.db, { email: body.email, role: body.role, invitedBy: caller.user.id, now: ctx.clock.now() });
    return { user: toUserResource(user) };
  },
});

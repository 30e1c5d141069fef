// Changing a user's role or active flag, shared by PATCH and DELETE /v1/users/{user_id}.
// Rules (docs/authorization.md): nobody changes a user ranked above them, nobody grants above
// their own role, and the last active owner cannot be demoted or deactivated. Sessions of the
// changed user end, so a demotion takes effect at once.
import type { Db } from "../db/client.ts";
import { inTransaction } from "../db/client.ts";
import type { Principal } from "./principal.ts";
import { fail } from "../http/errors.ts";
import { roleAtLeast, type Role } from "./roles.ts";
import { countActiveOwners, findUserById, updateUser, type User } from "./users.ts";
import { deleteUserSessions } from "./sessions.ts";

export async function changeUser(db: Db, caller: Principal, userId: string, change: { role?: Role; active?: boolean }, now: number): Promise<User> {
  return inTransaction(db, async (tx) => {
    const target = await findUserById(tx, userId);
    if (!target) fail("not_found", "No user with that id.");
    if (!roleAtLeast(caller.role, target.role)) fail("forbidden", "You cannot change a user whose role is above yours.");
    if (change.role && !roleAtLeast(caller.role, change.role)) fail("role_not_allowed", `You cannot grant ${change.role}, which is above your own role.`);
    const losesOwner = target.role === "owner" && target.active && ((change.role && change.role !== "owner") || change.active === false);
    if (losesOwner && (await countActiveOwners(tx)) <= 1) fail("last_owner", "The last owner cannot be demoted or deactivated; make someone else owner first.");
    const updated = await updateUser(tx, userId, change, now);
    if ((change.role && change.role !== target.role) || change.active === false) await deleteUserSessions(tx, userId);
    return updated!;
  });
}

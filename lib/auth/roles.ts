// Instance roles, highest first (docs/authorization.md "Roles"): owner > admin > maintainer > developer.
import { z } from "zod";

export const ROLES = ["owner", "admin", "maintainer", "developer"] as const;
export type Role = (typeof ROLES)[number];
export const RoleSchema = z.enum(ROLES);

const RANK: Record<Role, number> = { owner: 4, admin: 3, maintainer: 2, developer: 1 };

export function roleAtLeast(role: Role, minimum: Role): boolean {
  return RANK[role] >= RANK[minimum];
}

/** The lower of two roles: a token acts with at most its creator's current role. */
export function lowerRole(a: Role, b: Role): Role {
  return RANK[a] <= RANK[b] ? a : b;
}

// JSON Merge Patch (RFC 7396): how a PATCH body changes a stored JSON document.
import { z } from "zod";

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * RFC 7396 section 2: an object in the patch merges member by member into the target, a member
 * set to null is removed, and anything else (a string, a number, an array) replaces the target's
 * value whole. The target is not modified.
 */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = applyMergePatch(out[key], value);
  }
  return out;
}

/**
 * The schema of a merge patch for documents of `schema`: every member optional and nullable
 * (null removes it, so its default applies again), nested objects patched the same way, and
 * everything else checked as the full schema would. Unknown members are still refused.
 */
export function mergePatchSchema(schema: z.ZodObject): z.ZodObject {
  const shape: Record<string, z.ZodType> = {};
  for (const [key, member] of Object.entries(schema.shape)) {
    const inner = withoutDefault(member as z.ZodType);
    shape[key] = (inner instanceof z.ZodObject ? mergePatchSchema(inner) : inner).nullable().optional();
  }
  return z.object(shape).strict();
}

function withoutDefault(member: z.ZodType): z.ZodType {
  let current = member;
  while (current instanceof z.ZodDefault || current instanceof z.ZodOptional) current = current.unwrap() as z.ZodType;
  return current;
}

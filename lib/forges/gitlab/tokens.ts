// GitLab webhook tokens: one per project, `roost_whk_<project id><secret>`, stored as a hash on
// the project row (so deleting the project deletes it), shown once when minted. Rotating replaces
// the hash, so the new token works at once and the old one is refused at once. Only the project
// that builds the repository can hold one, so nobody outside it can mint a token that builds it.
import type { Executor } from "../../db/client.ts";
import { one, str } from "../../db/client.ts";
import { setWebhookTokenHash } from "../../projects/store.ts";
import { mintSecret, parseSecret, secretMatches } from "../../auth/secrets.ts";

export async function rotateWebhookToken(db: Executor, projectId: string): Promise<string> {
  const minted = mintSecret("whk", projectId);
  await setWebhookTokenHash(db, projectId, minted.hash);
  return minted.token;
}

/** The project whose current token this is, with the catalogue repository it builds; null for any other token. */
export async function projectForWebhookToken(db: Executor, token: string): Promise<{ projectId: string; repositoryId: string } | null> {
  const parsed = parseSecret("whk", token.trim());
  if (!parsed) return null;
  const row = await one(db, "SELECT id, repository_id, webhook_token_hash FROM projects WHERE id = ? AND unlinked_at IS NULL", [parsed.id]);
  const hash = row?.webhook_token_hash;
  if (!row || typeof hash !== "string" || !secretMatches(parsed.secret, hash)) return null;
  return { projectId: str(row, "id"), repositoryId: str(row, "repository_id") };
}

// GitLab webhook tokens: one per repository, `roost_whk_<repository id><secret>`, stored as a
// hash, shown once when minted. Rotating replaces the hash, so the new token works at once and
// the old one is refused at once.
import type { Executor } from "../db/client.ts";
import { one } from "../db/client.ts";
import { mintSecret, parseSecret, secretMatches } from "../auth/secrets.ts";
import type { Repository } from "../db/repositories.ts";

export async function rotateWebhookToken(db: Executor, repositoryId: string): Promise<string> {
  const minted = mintSecret("whk", repositoryId);
  await db.execute({ sql: "UPDATE repositories SET webhook_token_hash = ? WHERE id = ?", args: [minted.hash, repositoryId] });
  return minted.token;
}

/** The candidate repository whose current token this is; a token of any other repository matches none. */
export async function repositoryForWebhookToken(db: Executor, candidates: Repository[], token: string): Promise<Repository | null> {
  const parsed = parseSecret("whk", token.trim());
  if (!parsed) return null;
  const repo = candidates.find((r) => r.id === parsed.id);
  if (!repo) return null;
  const row = await one(db, "SELECT webhook_token_hash FROM repositories WHERE id = ?", [repo.id]);
  const hash = row?.webhook_token_hash;
  return typeof hash === "string" && secretMatches(parsed.secret, hash) ? repo : null;
}

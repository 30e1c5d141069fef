// Finishing a login, whatever the method: always a new session (session fixation, Jenkins
// CVE-2024-52553), and a session presented with the login request is ended.
import type { RequestContext } from "../http/context.ts";
import type { User } from "./users.ts";
import { toPublicUser } from "./users.ts";
import { createSession, deleteSession, validateSessionToken, type SessionMethod } from "./sessions.ts";
import { bearerToken } from "../http/io.ts";

export async function completeLogin(ctx: RequestContext, user: User, method: SessionMethod) {
  const now = ctx.clock.now();
  const presented = bearerToken(ctx.request);
  if (presented) {
    const previous = await validateSessionToken(ctx.db, presented, now);
    if (previous) await deleteSession(ctx.db, previous.id);
  }
  const { token, session } = await createSession(ctx.db, user.id, method, now);
  ctx.log.info("login", { request_id: ctx.requestId, user_id: user.id, method });
  return { session_token: token, expires_at: session.expires_at, user: toPublicUser(user) };
}

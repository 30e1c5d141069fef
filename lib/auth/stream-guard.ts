// Long-lived streams (GET /v1/events, a build's log stream) outlive the request that authenticated
// them, so each asks again every RECHECK_MS: does the session or API token that opened it still
// work (not logged out, revoked or expired, its user active), and may that principal still see
// what the stream shows? When not, the stream sends `event: revoked` with the {code, message} a
// request would get now, and closes (docs/api.md "Streams end with their credential"). The cost
// is one read by primary key per stream every RECHECK_MS (plus the stream's own access read),
// however many events flow; nothing is read per event.
import type { AppContext } from "../http/context.ts";
import type { ErrorCode } from "../http/errors.ts";
import type { Principal } from "./principal.ts";
import { credentialOf, reauthenticate } from "./reauthenticate.ts";
import { INVALID_API_TOKEN_MESSAGE } from "./authenticate.ts";

/** How often an open stream asks again: it ends within about this long after its credential does. */
export const RECHECK_MS = 2_000;

export interface StreamRefusal {
  code: ErrorCode;
  message: string;
}

export interface StreamGuardHooks {
  /** Whether `principal`, as the credential stands for it now, may still read the stream; null when it may. */
  stillAllowed(principal: Principal): Promise<StreamRefusal | null>;
  /** The credential or the access ended: send `event: revoked` with the refusal and close. Called once. */
  onRefused(refusal: StreamRefusal): void;
  /** A check could not be made: end the stream with an error (the client reconnects and is authenticated afresh). */
  onError(error: unknown): void;
}

/** Checks every RECHECK_MS until the returned function is called or a check refuses. */
export function guardStream(ctx: AppContext, opened: Principal, hooks: StreamGuardHooks): () => void {
  const credential = credentialOf(opened);
  let stopped = false;
  let checking = false;
  const stop = () => {
    stopped = true;
    clearInterval(timer);
  };
  const check = async () => {
    if (stopped || checking) return;
    checking = true;
    try {
      const principal = await reauthenticate(ctx.db, credential, ctx.clock.now());
      const refusal = principal ? await hooks.stillAllowed(principal) : credentialEnded(credential.kind);
      if (refusal && !stopped) {
        stop();
        hooks.onRefused(refusal);
      }
    } catch (error) {
      // Fail closed: a stream whose credential cannot be checked does not go on unchecked.
      if (!stopped) {
        stop();
        hooks.onError(error);
      }
    } finally {
      checking = false;
    }
  };
  const timer = setInterval(check, RECHECK_MS);
  (timer as { unref?: () => void }).unref?.();
  return stop;
}

/** The refusal a request with the ended credential gets (lib/auth/authenticate.ts). */
function credentialEnded(kind: Principal["kind"]): StreamRefusal {
  if (kind === "api_token") return { code: "invalid_token", message: INVALID_API_TOKEN_MESSAGE };
  return {
    code: "invalid_session",
    message: "The session that opened this stream has ended (signed out, expired, or its user deactivated or given another role); sign in again.",
  };
}

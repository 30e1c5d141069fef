// The authenticated caller of a request. A principal is always a user acting either through a
// session or through an API token; `role` is the effective role for this request.
import type { Role } from "./roles.ts";
import type { User } from "./users.ts";

export interface Principal {
  kind: "session" | "api_token";
  user: User;
  role: Role;
  sessionId: string | null;
  tokenId: string | null;
  /** When the credential stops working: a token created with this credential may not outlive it. */
  credentialExpiresAt: number;
}

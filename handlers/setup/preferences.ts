// POST /v1/setup/preferences (docs/api.md "Setup"): stores the runtime mode and, for
// External Access, the remote auth mode, before any owner exists. Authorized by the one-time
// setup token, since no owner exists yet to authorize it (README "First run").
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { SetupContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { setPreferences } from "../../lib/setup/instance.ts";

export const PreferencesBody = z
  .object({
    runtime_mode: z.enum(["local", "remote"]),
    remote_auth_mode: z.enum(["oidc", "trusted_proxy"]).optional().describe("required when runtime_mode is remote"),
  })
  .strict()
  .refine((b) => b.runtime_mode === "local" || b.remote_auth_mode !== undefined, {
    message: "remote_auth_mode is required when runtime_mode is remote",
    path: ["remote_auth_mode"],
  });

export const PreferencesResult = z.object({
  runtime_mode: z.enum(["local", "remote"]),
  remote_auth_mode: z.enum(["oidc", "trusted_proxy"]).nullable(),
  session_expires_at: z.number().int().describe("when the setup token used for this call expires (Unix seconds)"),
});

export const endpoint = defineEndpoint({
  operationId: "setup_preferences",
  summary: "Choose the runtime mode and remote auth mode during first-run setup",
  body: PreferencesBody,
  response: PreferencesResult,
  async handle({ body }, ctx: SetupContext) {
    const remoteAuth = body.runtime_mode === "remote" ? body.remote_auth_mode! : null;
    const stored = await setPreferences(ctx.db, body.runtime_mode, remoteAuth, ctx.clock.now());
    if (!stored) fail("setup_already_complete");
    return { runtime_mode: body.runtime_mode, remote_auth_mode: remoteAuth, session_expires_at: ctx.setupToken.expires_at };
  },
});

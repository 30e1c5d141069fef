// Every forge Roost builds from, registered once. The integration create body, the wire enums of
// `provider` and `host`, the webhook receivers, the catalogue sync, branch heads, the pipeline file
// reader, the claim's clone credentials, the commit status reporter and the test results' file
// links all look a forge up here; none of them names one, and the database does not list them
// (schema.sql migration 28): a name is checked here, where it is written (the create body).
// Adding a forge is a folder under lib/forges/ with an index.ts that exports a `Forge`, one line
// below, and its receiver (handlers/webhooks/<forge>.ts) in handlers/routes.ts
// (docs/architecture.md "Adding a forge").
import { z } from "zod";
import type { ConnectBody, Forge } from "./forge.ts";
import { ForgeApiError } from "./http.ts";
import { bitbucket } from "./bitbucket/index.ts";
import { git } from "./git/index.ts";
import { gitea } from "./gitea/index.ts";
import { github } from "./github/index.ts";
import { gitlab } from "./gitlab/index.ts";

/** In the order they joined Roost, which is the order the API document lists them in. */
export const FORGES = [github, gitlab, gitea, git, bitbucket] as const;

export type ForgeName = (typeof FORGES)[number]["name"];

export const FORGE_NAMES = FORGES.map((f) => f.name) as [ForgeName, ...ForgeName[]];

export function forgeNamed(name: string): Forge<ForgeName> | null {
  return FORGES.find((f) => f.name === name) ?? null;
}

/** The forge of a stored integration or repository; a name this Roost has no forge for (a row written by a newer one) is a ForgeApiError. */
export function forgeOf(row: { provider: string }): Forge<ForgeName> {
  const forge = forgeNamed(row.provider);
  if (!forge) throw new ForgeApiError(`this Roost has no forge "${row.provider}"`, null);
  return forge;
}

/**
 * POST /v1/integrations' bodies, one per forge, told apart by `provider`. The plain git remote,
 * which fits any server without a forge of its own, comes last, where the API document has always
 * listed it.
 */
export const ConnectBodies = z.discriminatedUnion(
  "provider",
  [...FORGES.filter((f) => f !== git), git].map((f) => f.connectBody) as unknown as [z.ZodObject, ...z.ZodObject[]],
) as unknown as z.ZodType<ConnectBody>;

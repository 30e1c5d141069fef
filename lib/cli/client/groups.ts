// The command groups lib/cli/client/commands.ts answers for, apart from it so that bin/roost.ts
// can dispatch to them without loading the client before one is asked for.
export const CLIENT_GROUPS = ["project", "pipeline", "build"] as const;

export type ClientGroup = (typeof CLIENT_GROUPS)[number];

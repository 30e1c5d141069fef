// Where the user commands find Roost and the API token they act with: ROOST_URL and ROOST_TOKEN,
// else a JSON file {"url": ..., "token": ...} at $ROOST_CONFIG, or
// $XDG_CONFIG_HOME/roost/config.json (default ~/.config/roost/config.json, as the XDG Base
// Directory Specification places a user's configuration). The file holds a credential, so like
// OpenSSH with a private key, a file that its group or others may read or write is refused, and so
// is one owned by another user.
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { UsageError } from "../args.ts";

export interface Remote {
  /** The instance's base URL, without a trailing slash. */
  url: string;
  token: string;
}

const ConfigFile = z.object({ url: z.string().optional(), token: z.string().optional() }).strict();

/** The config file's path for this environment. */
export function configPath(env: Record<string, string | undefined>): string {
  if (env.ROOST_CONFIG) return env.ROOST_CONFIG;
  const base = env.XDG_CONFIG_HOME || join(env.HOME || "/", ".config");
  return join(base, "roost", "config.json");
}

/** The remote from the environment, the config file filling what it leaves unset; a UsageError (exit 2) says what is missing or wrong. */
export function resolveRemote(env: Record<string, string | undefined>): Remote {
  let url = env.ROOST_URL || undefined;
  let token = env.ROOST_TOKEN || undefined;
  const path = configPath(env);
  if ((!url || !token) && (existsSync(path) || env.ROOST_CONFIG)) {
    const file = readConfigFile(path);
    url ??= file.url;
    token ??= file.token;
  }
  if (!url || !token) {
    const missing = [!url && "ROOST_URL", !token && "ROOST_TOKEN"].filter(Boolean).join(" and ");
    throw new UsageError(`roost: no ${missing}; set ${missing}, or write {"url": …, "token": …} to ${path} (mode 0600); see 'roost build --help'`);
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`roost: ROOST_URL '${url}' is not a URL (e.g. https://ci.example.com)`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new UsageError(`roost: ROOST_URL must be http:// or https://, not '${url}'`);
  return { url: url.replace(/\/+$/, ""), token };
}

function readConfigFile(path: string): { url?: string; token?: string } {
  let stat;
  try {
    stat = statSync(path);
  } catch {
    throw new UsageError(`roost: cannot read the config file ${path} (ROOST_CONFIG): it does not exist`);
  }
  const mode = stat.mode & 0o777;
  if (mode & 0o077) {
    throw new UsageError(
      `roost: ${path} holds an API token but its group or others may access it (mode ${mode.toString(8).padStart(4, "0")}); run 'chmod 600 ${path}'`,
    );
  }
  if (typeof process.getuid === "function" && stat.uid !== process.getuid()) {
    throw new UsageError(`roost: ${path} belongs to another user (uid ${stat.uid}); a config file with an API token must be your own`);
  }
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new UsageError(`roost: ${path} is not valid JSON: ${(error as Error).message}`);
  }
  const parsed = ConfigFile.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new UsageError(`roost: ${path}: ${issue.path.join(".") || "the file"}: ${issue.message} (expected {"url": "https://…", "token": "roost_pat_…"})`);
  }
  return parsed.data;
}

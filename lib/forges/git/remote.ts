// A plain git remote (docs/any-git.md): https with optional credentials, ssh with a deploy key, or
// (when ROOST_GIT_ALLOW_LOCAL_REMOTES=true) a path or file:// URL on this machine. Branch heads
// come from `git ls-remote`; nothing is cloned here. Credentials never appear on a command line
// (other users can read those): https credentials go in an http.extraHeader set through the
// environment (GIT_CONFIG_COUNT, git 2.31+), an ssh key in a private temporary file.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ForgeApiError } from "../http.ts";

export interface GitCredentials {
  username?: string;
  password?: string;
  ssh_private_key?: string;
  /** known_hosts lines for the ssh host; without them the first key seen is accepted. */
  ssh_known_hosts?: string;
  /** Signs POST /v1/webhooks/git deliveries for the project on this repository. */
  webhook_secret?: string;
}

export type RemoteKind = "https" | "ssh" | "local";

/**
 * What kind of remote a URL is, or why it is refused. Credentials inside the URL are refused so
 * they are sealed like every other secret; so is anything git would read as an option or as a
 * helper-run transport (ext::, fd::), which could run commands on this machine.
 */
export function classifyRemote(url: string, allowLocal: boolean): { kind: RemoteKind } | { refused: string } {
  if (url.startsWith("-") || /[\0\n\r]/.test(url)) return { refused: "is not a git URL" };
  if (/^[a-z][a-z0-9+.-]*::/i.test(url)) return { refused: "must not use a remote helper (ext::, fd::)" };
  const scp = /^(?:[A-Za-z0-9._-]+@)?[A-Za-z0-9.-]+:(?!\/\/)[^\s]+$/.exec(url);
  if (/^https?:\/\//i.test(url) || /^ssh:\/\//i.test(url)) {
    const parsed = URL.parse(url);
    if (!parsed) return { refused: "is not a URL" };
    if (parsed.password || (parsed.username && parsed.protocol !== "ssh:"))
      return { refused: "must not carry credentials: give them as username/password or ssh_private_key" };
    return { kind: parsed.protocol === "ssh:" ? "ssh" : "https" };
  }
  if (/^file:\/\//i.test(url) || url.startsWith("/")) {
    return allowLocal ? { kind: "local" } : { refused: "is a path on this machine, allowed only with ROOST_GIT_ALLOW_LOCAL_REMOTES=true" };
  }
  if (scp && !url.startsWith("/")) return { kind: "ssh" };
  return { refused: "must be an https://, ssh:// or user@host:path URL (or a local path)" };
}

/** A readable name for the catalogue: the URL's path without .git ("team/app" for https://host/team/app.git). */
export function repositoryNameOf(url: string): string {
  const path = url
    .replace(/^[a-z]+:\/\/[^/]*/i, "")
    .replace(/^[^/:]*@?[^/:]*:/, "")
    .replace(/\.git\/?$/, "")
    .replace(/\/+$/, "");
  const parts = path.split("/").filter((p) => p !== "");
  return parts.slice(-2).join("/") || url;
}

export interface RemoteHeads {
  /** The branch HEAD points to, when the remote says (--symref). */
  defaultBranch: string | null;
  /** refs/heads/* and refs/tags/* → commit sha (annotated tags: the commit they point to). */
  refs: Map<string, string>;
}

export const LS_REMOTE_TIMEOUT_MS = 30_000;

/** The environment git runs with against a remote: no prompts, no system config, credentials outside the command line. keyDir (if any) is removed by the caller. */
function gitEnvironment(credentials: GitCredentials): { env: Record<string, string>; keyDir: string | null } {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: process.env.HOME ?? tmpdir(),
    // Never ask on a terminal; only these transports (no ext::), and no system-wide config.
    GIT_TERMINAL_PROMPT: "0",
    GIT_ALLOW_PROTOCOL: "https:http:ssh:file",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_ASKPASS: "/bin/false",
    SSH_ASKPASS: "/bin/false",
  };
  let keyDir: string | null = null;
  if (credentials.password) {
    const basic = Buffer.from(`${credentials.username ?? "git"}:${credentials.password}`).toString("base64");
    Object.assign(env, { GIT_CONFIG_COUNT: "1", GIT_CONFIG_KEY_0: "http.extraHeader", GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}` });
  }
  if (credentials.ssh_private_key) {
    keyDir = mkdtempSync(join(tmpdir(), "roost-ssh-"));
    const keyFile = join(keyDir, "key");
    const knownHosts = join(keyDir, "known_hosts");
    writeFileSync(keyFile, credentials.ssh_private_key.endsWith("\n") ? credentials.ssh_private_key : `${credentials.ssh_private_key}\n`, { mode: 0o600 });
    writeFileSync(knownHosts, credentials.ssh_known_hosts ?? "", { mode: 0o600 });
    const strict = credentials.ssh_known_hosts ? "yes" : "accept-new";
    env.GIT_SSH_COMMAND = `ssh -i '${keyFile}' -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=${strict} -o UserKnownHostsFile='${knownHosts}'`;
  }
  return { env, keyDir };
}

/** Runs `git ls-remote --symref` against the remote; throws ForgeApiError with git's first line of complaint. */
export async function lsRemote(url: string, credentials: GitCredentials): Promise<RemoteHeads> {
  const { env, keyDir } = gitEnvironment(credentials);
  try {
    const proc = Bun.spawn(["git", "ls-remote", "--symref", url], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const timer = setTimeout(() => proc.kill(), LS_REMOTE_TIMEOUT_MS);
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    clearTimeout(timer);
    if (code !== 0) {
      const line = err.split("\n").find((l) => l.trim() !== "") ?? `exit ${code}`;
      throw new ForgeApiError(`git ls-remote failed: ${maskSecrets(line, credentials).slice(0, 300)}`, null);
    }
    return parseLsRemote(out);
  } finally {
    if (keyDir) rmSync(keyDir, { recursive: true, force: true });
  }
}

/**
 * A file's bytes at a commit of the remote, or null when the commit has no such file: the commit
 * alone is fetched (depth 1) into a private temporary bare repository, read with `git cat-file`,
 * and the repository removed. A server that refuses to hand out a commit by id
 * (uploadpack.allowReachableSHA1InWant off) is asked for `ref` instead.
 */
export async function showRemoteFile(url: string, credentials: GitCredentials, sha: string, path: string, ref: string | null): Promise<string | null> {
  if (!/^[0-9a-f]{40,64}$/.test(sha)) throw new ForgeApiError("a file is read at a full commit id", null);
  const { env, keyDir } = gitEnvironment(credentials);
  const dir = mkdtempSync(join(tmpdir(), "roost-file-"));
  const git = async (args: string[], timeoutMs = LS_REMOTE_TIMEOUT_MS) => {
    const proc = Bun.spawn(["git", `--git-dir=${dir}`, ...args], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const timer = setTimeout(() => proc.kill(), timeoutMs);
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    clearTimeout(timer);
    return { out, err, code };
  };
  try {
    await git(["init", "--bare", "-q"]);
    let fetched = await git(["fetch", "--depth=1", "--no-tags", "-q", "--", url, sha]);
    if (fetched.code !== 0 && ref && !ref.startsWith("-")) fetched = await git(["fetch", "--no-tags", "-q", "--", url, ref]);
    if (fetched.code !== 0) {
      const line = fetched.err.split("\n").find((l) => l.trim() !== "") ?? `exit ${fetched.code}`;
      throw new ForgeApiError(`git fetch failed: ${maskSecrets(line, credentials).slice(0, 300)}`, null);
    }
    if ((await git(["cat-file", "-e", `${sha}^{commit}`])).code !== 0) throw new ForgeApiError(`the remote has no commit ${sha.slice(0, 12)}`, null);
    if ((await git(["cat-file", "-e", `${sha}:${path}`])).code !== 0) return null;
    const blob = await git(["cat-file", "blob", `${sha}:${path}`]);
    if (blob.code !== 0) throw new ForgeApiError(`${path} at ${sha.slice(0, 12)} is not a file`, null);
    return blob.out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
    if (keyDir) rmSync(keyDir, { recursive: true, force: true });
  }
}

function maskSecrets(text: string, credentials: GitCredentials): string {
  let out = text;
  for (const secret of [credentials.password, credentials.ssh_private_key]) if (secret && secret.length >= 4) out = out.split(secret).join("********");
  return out;
}

/** `<sha>\t<ref>` lines; `ref: <target>\tHEAD` for the symbolic HEAD; `<sha>\t<tag>^{}` peels an annotated tag. */
export function parseLsRemote(output: string): RemoteHeads {
  const refs = new Map<string, string>();
  const peeled = new Map<string, string>();
  let defaultBranch: string | null = null;
  for (const line of output.split("\n")) {
    const [left, ref] = line.split("\t");
    if (!left || !ref) continue;
    if (left.startsWith("ref: ")) {
      if (ref === "HEAD" && left.startsWith("ref: refs/heads/")) defaultBranch = left.slice("ref: refs/heads/".length);
      continue;
    }
    if (!/^[0-9a-f]{40,64}$/.test(left)) continue;
    if (ref.endsWith("^{}")) peeled.set(ref.slice(0, -3), left);
    else if (ref.startsWith("refs/heads/") || ref.startsWith("refs/tags/")) refs.set(ref, left);
  }
  for (const [ref, sha] of peeled) if (refs.has(ref)) refs.set(ref, sha);
  return { defaultBranch, refs };
}

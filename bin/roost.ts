#!/usr/bin/env bun
// The `roost` command. Exit codes a script can rely on:
//   0 success · 1 the operation failed (e.g. daemon unreachable) · 2 usage or configuration error.
import { ConfigError, loadConfig, type Config } from "../lib/daemon/config.ts";
import pkg from "../package.json" with { type: "json" };
import { UsageError, parseCommandArgs } from "../lib/cli/args.ts";
import { CLIENT_GROUPS, type ClientGroup } from "../lib/cli/client/groups.ts";

const USAGE = `roost ${pkg.version}: self-hosted CI for Flutter apps

Usage: roost <command> [options]

Commands:
  serve                 start the daemon (ROOST_LISTEN, ROOST_DATA_DIR, ...; see README)
  login [--email E]     sign in from this host: mints a one-time capability over the management socket
  recover               mint a one-time recovery capability over the management socket
  recover setup-token   mint a fresh first-run setup token over the management socket
  migrate               apply pending database migrations and exit
  backup <file>         write a consistent copy of the database to <file> (safe while serving)
  runner                run builds for a Roost daemon (ROOST_URL, ROOST_RUNNER_ID, ROOST_RUNNER_TOKEN)
  user                  list, invite, change or deactivate users (works on the database directly)
  token                 list or revoke API tokens (works on the database directly)
  version               print the version

Commands for users of a Roost instance, over its API (ROOST_URL, ROOST_TOKEN; see docs/cli.md):
  project list          the projects you can see
  pipeline list         a project's pipelines
  build <action>        list, show, start, follow, cancel, rerun, publish, artifacts, download

Run 'roost <command> --help' for a command's details.`;

const HELP: Record<string, string> = {
  serve: `roost serve: start the daemon.

Listens on ROOST_LISTEN (default 127.0.0.1:8080), keeps state under ROOST_DATA_DIR (default ./data),
and serves the management socket at ROOST_MANAGEMENT_SOCKET (default <data dir>/roost.sock).
Stops gracefully on SIGTERM or SIGINT.`,
  login: `roost login [--email E]: sign in to this Roost from its host.

Once setup is complete, loopback alone signs nobody in (any process on this host is loopback,
build code on a runner included): a local login needs a one-time capability that only someone
who can open the daemon's Unix management socket (<data dir>/roost.sock, mode 0600) can mint.
This command mints one (valid 5 minutes, single use) and prints, each on its own line, the
capability to paste on the web app's sign-in page (on stderr, with what it is) and the command
that signs in with it (on stdout):

  roost_rcv_…
  curl -sS -X POST http://127.0.0.1:8080/v1/auth/local/login -H 'content-type: application/json' \
       -d '{"email":"E","recovery_capability":"roost_rcv_…"}'

Without --email, the login signs in the only active user (with several users, --email is needed).
Needs read/write access to the socket file (the daemon's user). Exit 1 when the daemon is unreachable.`,
  recover: `roost recover [setup-token]: talk to the running daemon over its Unix management socket.

  roost recover              prints a recovery capability (roost_rcv_…), valid 5 minutes, single use.
                             Use it as "recovery_capability" in POST /v1/auth/local/login from this machine
                             when External Access sign-in is broken.
  roost recover setup-token  prints a fresh setup token (roost_setup_…) while setup is incomplete.

Needs read/write access to the socket file (the daemon's user). Exit 1 when the daemon is unreachable.`,
  migrate: `roost migrate: apply pending migrations from the embedded schema to the configured database, then exit.`,
  version: `roost version: print the version.`,
  backup: `roost backup <file>: write a consistent snapshot of the embedded database to <file> with VACUUM INTO.

Safe while the daemon serves. The file is 0600. Back up secret.key (or keep ROOST_SECRET_KEY) too:
without it the encrypted secrets in the database cannot be read. Exit 1 if <file> exists or cannot be
written, 2 when the configured data directory holds no Roost database or ROOST_DATABASE_URL names a
libSQL server (back that up on its host: docs/operations.md "Several hosts").`,
  user: `roost user <action>: manage users without the API, on the configured database.

  roost user list
  roost user invite <email> [--role owner|admin|maintainer|developer]   (default developer)
  roost user set-role <email> <role>
  roost user deactivate <email>        ends their sessions; their API tokens stop working
  roost user reactivate <email>

The last owner cannot be demoted or deactivated. Exit 1 when the operation is refused, 2 on bad usage
or when the configured data directory holds no Roost database (nothing is created).`,
  token: `roost token <action>: manage API tokens without the API, on the configured database.

  roost token list                 id, name, role, creator, state
  roost token revoke <token_id>

Exit 1 when the token does not exist, 2 on bad usage.`,
};

/** POSTs to the daemon's Unix management socket; the JSON answer, or the exit code after saying why not. */
async function mintOverSocket(config: Config, path: string): Promise<Record<string, unknown> | number> {
  let response: Response;
  try {
    response = await fetch(`http://roost${path}`, { method: "POST", unix: config.managementSocketPath } as RequestInit);
  } catch {
    process.stderr.write(`cannot reach the management socket at ${config.managementSocketPath}; is 'roost serve' running, and are you its user?\n`);
    return 1;
  }
  const body = (await response.json()) as Record<string, unknown>;
  if (!response.ok) {
    process.stderr.write(`${body.code}: ${body.message}\n`);
    return 1;
  }
  return body;
}

/** The daemon's address as a loopback client on this host dials it (ROOST_LISTEN; a wildcard listen means loopback). */
function loginBaseUrl(config: Config): string {
  const { hostname, port } = config.listen;
  const host = hostname === "0.0.0.0" || hostname === "" ? "127.0.0.1" : hostname === "::" ? "[::1]" : hostname.includes(":") ? `[${hostname}]` : hostname;
  return `http://${host}:${port}`;
}

function configOrExit(): Config {
  try {
    return loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(error.message + "\n");
      process.exit(2);
    }
    throw error;
  }
}

/** `roost version` */
async function version(rest: string[]): Promise<number> {
  parseCommandArgs("roost version", rest, {});
  process.stdout.write(`roost ${pkg.version}\n`);
  return 0;
}

/** `roost serve`: runs the daemon until SIGTERM or SIGINT. */
async function serve(rest: string[]): Promise<number> {
  parseCommandArgs("roost serve", rest, {});
  const config = configOrExit();
  const { startDaemon, StartupError, describeSystemError } = await import("../lib/daemon/server.ts");
  const { routes } = await import("../handlers/routes.ts");
  const daemon = await startDaemon(config, routes).catch((error: unknown) => {
    // A start-up problem is one line naming its cause, never a stack trace; exit 2 (configuration).
    const cause = error instanceof StartupError ? error.message : `cannot start: ${describeSystemError(error)}`;
    process.stderr.write(`roost serve: ${cause}\n`);
    process.exit(2);
  });
  // The compiled binary starts with a reluctant JIT (scripts/build.ts); serving is the hot path.
  Bun.unsafe.setJITPolicy(1);
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await daemon.stop();
    process.exit(0);
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  return new Promise<number>(() => {});
}

/** `roost migrate`: the one admin command that may create the database; it prepares an instance before its first start. */
async function migrate(rest: string[]): Promise<number> {
  parseCommandArgs("roost migrate", rest, {});
  const config = configOrExit();
  const { openDatabase } = await import("../lib/db/client.ts");
  const { migrate } = await import("../lib/db/migrate.ts");
  const { prepareDataDir, StartupError } = await import("../lib/daemon/server.ts");
  await prepareDataDir(config).catch((error: unknown) => {
    throw error instanceof StartupError ? new UsageError(`roost migrate: ${error.message}`) : error;
  });
  const db = await openDatabase(config.databaseUrl, config.databaseAuthToken, undefined, config.databaseTimeoutMs);
  const result = await migrate(db, () => Math.floor(Date.now() / 1000));
  process.stdout.write(`schema version ${result.from} -> ${result.to}\n`);
  db.close();
  return 0;
}

/** `roost recover [setup-token]`: mints a recovery capability (or a setup token) over the management socket. */
async function recover(rest: string[]): Promise<number> {
  const what = parseCommandArgs("roost recover", rest, {}, ["[setup-token]"]).positionals[0];
  if (what !== undefined && what !== "setup-token") {
    throw new UsageError(`roost recover: unknown target '${what}' (only setup-token); see 'roost recover --help'`);
  }
  const config = configOrExit();
  const body = await mintOverSocket(config, what === "setup-token" ? "/setup-tokens" : "/recovery-capabilities");
  if (typeof body === "number") return body;
  process.stdout.write(String(body.recovery_capability ?? body.setup_token) + "\n");
  process.stderr.write(`expires at ${new Date(Number(body.expires_at) * 1000).toISOString()}\n`);
  return 0;
}

/** `roost login [--email]`: a recovery capability, and the command that signs in with it. */
async function login(rest: string[]): Promise<number> {
  const email = parseCommandArgs("roost login", rest, { email: { type: "string" } }).values.email as string | undefined;
  const config = configOrExit();
  const minted = await mintOverSocket(config, "/recovery-capabilities");
  if (typeof minted === "number") return minted;
  const capability = String(minted.recovery_capability);
  const body = JSON.stringify({ ...(email === undefined ? {} : { email }), recovery_capability: capability });
  // A person reads the capability on its own line, to paste on the sign-in page, then the
  // command; stdout is the command alone, as before, so `eval "$(roost login)"` still signs
  // in (`roost recover` prints the bare capability on stdout for scripts).
  const until = new Date(Number(minted.expires_at) * 1000).toISOString();
  process.stderr.write(
    `one-time capability, valid until ${until}, single use; paste it on the sign-in page (${loginBaseUrl(config)}/sign-in):\n${capability}\nor sign in from a shell on this host with:\n`,
  );
  process.stdout.write(
    `curl -sS -X POST ${loginBaseUrl(config)}/v1/auth/local/login -H 'content-type: application/json' -d '${body.replace(/'/g, "'\\''")}'\n`,
  );
  return 0;
}

/** `roost backup <file>`: a consistent copy of a local database file. */
async function backup(rest: string[]): Promise<number> {
  const target = parseCommandArgs("roost backup", rest, {}, ["<file>"]).positionals[0]!;
  const config = configOrExit();
  if (!config.databaseUrl.startsWith("file:")) {
    // VACUUM INTO writes on the database's own host, and sqld refuses it.
    throw new UsageError(`roost backup: the database is a libSQL server (ROOST_DATABASE_URL); back it up on its host, see docs/operations.md "Several hosts"`);
  }
  const { openExistingDatabase } = await import("../lib/cli/database.ts");
  const { resolve } = await import("node:path");
  const { existsSync } = await import("node:fs");
  const { chmod } = await import("node:fs/promises");
  const path = resolve(target);
  if (existsSync(path)) {
    process.stderr.write(`${path} exists; choose a new file\n`);
    return 1;
  }
  const db = await openExistingDatabase(config, "roost backup");
  try {
    // The copy holds everything the database does (password-equivalent token hashes, encrypted
    // secrets): 0600 like the data directory's files (the umask is 077; chmod says it again).
    await db.execute({ sql: "VACUUM INTO ?", args: [path] });
    await chmod(path, 0o600);
  } catch (error) {
    process.stderr.write(`backup failed: ${(error as Error).message}\n`);
    return 1;
  } finally {
    db.close();
  }
  process.stdout.write(`${path}\n`);
  return 0;
}

/** `roost user …` and `roost token …`: the operator commands on the database itself. */
async function admin(command: "user" | "token", rest: string[]): Promise<number> {
  const { parseAdminCommand, runAdminCommand } = await import("../lib/cli/admin.ts");
  const parsed = parseAdminCommand(command, rest);
  const config = configOrExit();
  const { migrate } = await import("../lib/db/migrate.ts");
  const { openExistingDatabase } = await import("../lib/cli/database.ts");
  const db = await openExistingDatabase(config, `roost ${command}`);
  await migrate(db, () => Math.floor(Date.now() / 1000));
  const result = await runAdminCommand(db, parsed);
  db.close();
  (result.code === 0 ? process.stdout : process.stderr).write(result.out + (result.out ? "\n" : ""));
  return result.code;
}

/** The commands that `roost --help` lists, beside the runner and the client groups. */
const COMMANDS = {
  version,
  serve,
  migrate,
  recover,
  login,
  backup,
  user: (rest: string[]) => admin("user", rest),
  token: (rest: string[]) => admin("token", rest),
} satisfies Record<string, (rest: string[]) => Promise<number>>;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === "help" || command === "--help" || command === "-h") {
    (command ? process.stdout : process.stderr).write(USAGE + "\n");
    return command ? 0 : 2;
  }
  // The runner and the client commands are loaded when asked for, so `roost serve` neither
  // evaluates nor holds them (docs/benchmarks.md, start-up); each answers its own --help.
  if (command === "runner") {
    Bun.unsafe.setJITPolicy(1); // a runner streams logs for hours: the normal JIT (scripts/build.ts)
    return (await import("../runner/main.ts")).runnerMain(rest);
  }
  if ((CLIENT_GROUPS as readonly string[]).includes(command))
    return (await import("../lib/cli/client/commands.ts")).runClientCommand(command as ClientGroup, rest);
  const run = COMMANDS[command as keyof typeof COMMANDS] as ((rest: string[]) => Promise<number>) | undefined;
  if (!run || !HELP[command]) throw new UsageError(`roost: unknown command '${command}'; see 'roost --help'`);
  if (rest.includes("--help") || rest.includes("-h")) {
    process.stdout.write(HELP[command] + "\n");
    return 0;
  }
  return run(rest);
}

process.exitCode = await main(process.argv.slice(2)).catch((error: unknown) => {
  // Usage errors (and admin commands pointed at no Roost database): one line on stderr, exit 2.
  if (!(error instanceof UsageError)) throw error;
  process.stderr.write(error.message + "\n");
  return 2;
});

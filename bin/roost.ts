#!/usr/bin/env bun
// The `roost` command. Exit codes a script can rely on:
//   0 success · 1 the operation failed (e.g. daemon unreachable) · 2 usage or configuration error.
import { ConfigError, loadConfig, type Config } from "../lib/config.ts";
import pkg from "../package.json" with { type: "json" };

const USAGE = `roost ${pkg.version}: self-hosted CI for Flutter apps

Usage: roost <command> [options]

Commands:
  serve                 start the daemon (ROOST_LISTEN, ROOST_DATA_DIR, ...; see README)
  recover               mint a one-time recovery capability over the management socket
  recover setup-token   mint a fresh first-run setup token over the management socket
  migrate               apply pending database migrations and exit
  backup <file>         write a consistent copy of the database to <file> (safe while serving)
  runner                run builds for a Roost daemon (ROOST_URL, ROOST_RUNNER_ID, ROOST_RUNNER_TOKEN)
  user                  list, invite, change or deactivate users (works on the database directly)
  token                 list or revoke API tokens (works on the database directly)
  version               print the version

Run 'roost <command> --help' for a command's details.`;

const HELP: Record<string, string> = {
  serve: `roost serve: start the daemon.

Listens on ROOST_LISTEN (default 127.0.0.1:8080), keeps state under ROOST_DATA_DIR (default ./data),
and serves the management socket at ROOST_MANAGEMENT_SOCKET (default <data dir>/roost.sock).
Stops gracefully on SIGTERM or SIGINT.`,
  recover: `roost recover [setup-token]: talk to the running daemon over its Unix management socket.

  roost recover              prints a recovery capability (roost_rcv_…), valid 5 minutes, single use.
                             Use it as "recovery_capability" in POST /v1/auth/local/login from this machine
                             when External Access sign-in is broken.
  roost recover setup-token  prints a fresh setup token (roost_setup_…) while setup is incomplete.

Needs read/write access to the socket file (the daemon's user). Exit 1 when the daemon is unreachable.`,
  migrate: `roost migrate: apply pending migrations from the embedded schema to the configured database, then exit.`,
  version: `roost version: print the version.`,
  runner: `roost runner: connect to a Roost daemon and run the builds it hands out (docs/runners.md).

Environment:
  ROOST_URL                  the daemon (default http://127.0.0.1:8080)
  ROOST_RUNNER_ID            from POST /v1/runners
  ROOST_RUNNER_TOKEN         roost_rt_… from POST /v1/runners (or its rotation)
  ROOST_RUNNER_WORKDIR       checkouts and the repository cache (default ./runner-work)
  ROOST_FLUTTER_SDKS         a directory of Flutter SDKs, <dir>/<version>/bin/flutter, for pinned versions
  ROOST_RUNNER_LABELS        extra labels, comma-separated
  ROOST_RUNNER_GRACE_SECONDS TERM → KILL grace when a build is canceled (default 10)

Stops on SIGTERM/SIGINT. Exit 2 on bad configuration, 1 when the daemon refuses the runner.`,
  backup: `roost backup <file>: write a consistent snapshot of the embedded database to <file> with VACUUM INTO.

Safe while the daemon serves. Back up secret.key (or keep ROOST_SECRET_KEY) too: without it the
encrypted secrets in the database cannot be read. Exit 1 if <file> exists or cannot be written.`,
  user: `roost user <action>: manage users without the API, on the configured database.

  roost user list
  roost user invite <email> [--role owner|admin|maintainer|developer]   (default developer)
  roost user set-role <email> <role>
  roost user deactivate <email>        ends their sessions; their API tokens stop working
  roost user reactivate <email>

The last owner cannot be demoted or deactivated. Exit 1 when the operation is refused, 2 on bad usage.`,
  token: `roost token <action>: manage API tokens without the API, on the configured database.

  roost token list                 id, name, role, creator, state
  roost token revoke <token_id>

Exit 1 when the token does not exist, 2 on bad usage.`,
};

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

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === "help" || command === "--help" || command === "-h") {
    process.stdout.write(USAGE + "\n");
    return command ? 0 : 2;
  }
  if (rest.includes("--help") || rest.includes("-h")) {
    const help = HELP[command];
    if (!help) {
      process.stderr.write(`unknown command: ${command}\n\n${USAGE}\n`);
      return 2;
    }
    process.stdout.write(help + "\n");
    return 0;
  }
  switch (command) {
    case "version":
      process.stdout.write(`roost ${pkg.version}\n`);
      return 0;
    case "serve": {
      const config = configOrExit();
      const { startDaemon } = await import("../lib/server.ts");
      const daemon = await startDaemon(config);
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
    case "migrate": {
      const config = configOrExit();
      const { openDatabase } = await import("../lib/db/client.ts");
      const { migrate } = await import("../lib/db/migrate.ts");
      const { prepareDataDir } = await import("../lib/server.ts");
      await prepareDataDir(config);
      const db = await openDatabase(config.databaseUrl, config.databaseAuthToken);
      const result = await migrate(db, () => Math.floor(Date.now() / 1000));
      process.stdout.write(`schema version ${result.from} -> ${result.to}\n`);
      db.close();
      return 0;
    }
    case "recover": {
      const config = configOrExit();
      const what = rest[0];
      if (what !== undefined && what !== "setup-token") {
        process.stderr.write(`unknown recover target: ${what}\n\n${HELP.recover}\n`);
        return 2;
      }
      const path = what === "setup-token" ? "/setup-tokens" : "/recovery-capabilities";
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
      process.stdout.write(String(body.recovery_capability ?? body.setup_token) + "\n");
      process.stderr.write(`expires at ${new Date(Number(body.expires_at) * 1000).toISOString()}\n`);
      return 0;
    }
    case "runner": {
      const id = process.env.ROOST_RUNNER_ID;
      const token = process.env.ROOST_RUNNER_TOKEN;
      if (!id || !token) {
        process.stderr.write(`ROOST_RUNNER_ID and ROOST_RUNNER_TOKEN are required\n\n${HELP.runner}\n`);
        return 2;
      }
      const { runRunner } = await import("../lib/runner/agent.ts");
      const { resolve } = await import("node:path");
      const stop = new AbortController();
      process.on("SIGTERM", () => stop.abort());
      process.on("SIGINT", () => stop.abort());
      try {
        await runRunner({
          url: (process.env.ROOST_URL ?? "http://127.0.0.1:8080").replace(/\/+$/, ""),
          runnerId: id,
          token,
          workDir: resolve(process.env.ROOST_RUNNER_WORKDIR ?? "./runner-work"),
          flutterSdks: process.env.ROOST_FLUTTER_SDKS,
          labels: (process.env.ROOST_RUNNER_LABELS ?? "").split(",").map((l) => l.trim()).filter(Boolean),
          graceMs: Number(process.env.ROOST_RUNNER_GRACE_SECONDS ?? "10") * 1000,
          log: (msg, fields) => process.stderr.write(JSON.stringify({ time: new Date().toISOString(), msg, ...fields }) + "\n"),
          stop: stop.signal,
        });
      } catch (error) {
        process.stderr.write(`${(error as Error).message}\n`);
        return 1;
      }
      return 0;
    }
    case "backup": {
      const config = configOrExit();
      const target = rest[0];
      if (!target) {
        process.stderr.write(HELP.backup + "\n");
        return 2;
      }
      const { openDatabase } = await import("../lib/db/client.ts");
      const { resolve } = await import("node:path");
      const { existsSync } = await import("node:fs");
      const path = resolve(target);
      if (existsSync(path)) {
        process.stderr.write(`${path} exists; choose a new file\n`);
        return 1;
      }
      const db = await openDatabase(config.databaseUrl, config.databaseAuthToken);
      try {
        await db.execute({ sql: "VACUUM INTO ?", args: [path] });
      } catch (error) {
        process.stderr.write(`backup failed: ${(error as Error).message}\n`);
        return 1;
      } finally {
        db.close();
      }
      process.stdout.write(`${path}\n`);
      return 0;
    }
    case "user":
    case "token": {
      const config = configOrExit();
      const { openDatabase } = await import("../lib/db/client.ts");
      const { migrate } = await import("../lib/db/migrate.ts");
      const { prepareDataDir } = await import("../lib/server.ts");
      const { runAdminCommand } = await import("../lib/cli/admin.ts");
      await prepareDataDir(config);
      const db = await openDatabase(config.databaseUrl, config.databaseAuthToken);
      await migrate(db, () => Math.floor(Date.now() / 1000));
      const result = await runAdminCommand(db, command, rest);
      db.close();
      (result.code === 0 ? process.stdout : process.stderr).write(result.out + (result.out ? "\n" : ""));
      return result.code;
    }
    default:
      process.stderr.write(`unknown command: ${command}\n\n${USAGE}\n`);
      return 2;
  }
}

process.exitCode = await main(process.argv.slice(2));

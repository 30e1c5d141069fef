// The companion that serves the Unix management socket alone, beside a daemon in another process
// on the same database: `bun scripts/management-socket.ts` (same ROOST_* environment as the daemon).
// `roost serve` serves the socket in-process; the logic is lib/daemon/management-socket.ts.
import { startManagementSocket } from "../lib/daemon/management-socket.ts";

if (import.meta.main) {
  const { ConfigError, loadConfig } = await import("../lib/daemon/config.ts");
  const { UsageError } = await import("../lib/cli/args.ts");
  const { openExistingDatabase } = await import("../lib/cli/database.ts");
  const { createLogger } = await import("../lib/daemon/log.ts");
  const { systemClock } = await import("../lib/http/context.ts");
  try {
    const config = loadConfig(process.env);
    const log = createLogger(config.logLevel);
    // It serves a daemon's database: one that is not there is a wrong ROOST_DATA_DIR, not one to create.
    const db = await openExistingDatabase(config, "management-socket");
    const socket = await startManagementSocket({ db, clock: systemClock, log, path: config.managementSocketPath });
    log.info("management socket listening", { path: socket.path });
    for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => void socket.stop().then(() => process.exit(0)));
  } catch (error) {
    if (!(error instanceof ConfigError || error instanceof UsageError)) throw error;
    process.stderr.write(error.message + "\n");
    process.exit(2);
  }
}

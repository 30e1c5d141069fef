// The companion that serves the Unix management socket alone, beside a daemon in another process
// on the same database: `bun scripts/management-socket.ts` (same ROOST_* environment as the daemon).
// `roost serve` serves the socket in-process; the logic is lib/management-socket.ts.
import { startManagementSocket } from "../lib/management-socket.ts";

if (import.meta.main) {
  const { loadConfig } = await import("../lib/config.ts");
  const { openDatabase } = await import("../lib/db/client.ts");
  const { createLogger } = await import("../lib/log.ts");
  const { systemClock } = await import("../lib/context.ts");
  const config = loadConfig(process.env);
  const log = createLogger(config.logLevel);
  const db = await openDatabase(config.databaseUrl, config.databaseAuthToken);
  const socket = await startManagementSocket({ db, clock: systemClock, log, path: config.managementSocketPath });
  log.info("management socket listening", { path: socket.path });
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => void socket.stop().then(() => process.exit(0)));
}

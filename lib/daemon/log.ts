// Structured JSON logs on stderr, one object a line. Anything that looks like a Roost credential
// is redacted before it is written, so a token pasted into a URL or an error never reaches a log.
import { redactSecrets } from "../auth/secrets.ts";

export type LogLevel = "debug" | "info" | "warn" | "error";
const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** Lifecycle lines an operator and a supervisor always need (listening address, stopped), whatever the level. */
  notice(msg: string, fields?: Record<string, unknown>): void;
}

export function createLogger(level: LogLevel, write: (line: string) => void = (l) => process.stderr.write(l + "\n")): Logger {
  const emit = (at: LogLevel, msg: string, fields?: Record<string, unknown>, always = false) => {
    if (!always && RANK[at] < RANK[level]) return;
    const line = JSON.stringify({ time: new Date().toISOString(), level: at, msg, ...fields }, (_k, v) =>
      v instanceof Error ? { name: v.name, message: v.message, stack: v.stack } : v,
    );
    write(redactSecrets(line));
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    notice: (m, f) => emit("info", m, f, true),
  };
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {}, notice() {} };

// Command-line arguments of `roost <command>`, parsed with node:util parseArgs in strict mode: an
// unknown option or an option without its value is a usage error (exit 2) told in one line that
// names the option, so `roost serve --port 1` never starts on the default port and
// `roost backup --bogus` never writes a file named `--bogus`. Write `--` before an argument that
// starts with a dash (POSIX Utility Syntax Guideline 10).
import { parseArgs } from "node:util";

/** Bad usage of a command: the one line says what is wrong and where to read more; the command exits 2. */
export class UsageError extends Error {}

export type OptionSpec = Record<string, { type: "string" | "boolean"; short?: string }>;

export interface CommandArgs {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

/**
 * Parses `args` for `command` (e.g. "roost backup"). `positionals` names the arguments in order,
 * the optional ones in brackets (`["<file>"]`, `["[setup-token]"]`); more than named is an error.
 */
export function parseCommandArgs(command: string, args: string[], options: OptionSpec, positionals: string[] = []): CommandArgs {
  const hint = `see '${command} --help'`;
  let parsed: CommandArgs;
  try {
    parsed = parseArgs({ args, options, strict: true, allowPositionals: true }) as CommandArgs;
  } catch (error) {
    throw new UsageError(`${command}: ${describeParseError(error)}; ${hint}`);
  }
  for (const [name, value] of Object.entries(parsed.values)) {
    if (value === "") throw new UsageError(`${command}: option '--${name}' needs a value; ${hint}`);
  }
  const required = positionals.filter((p) => !p.startsWith("["));
  if (parsed.positionals.length > positionals.length) {
    throw new UsageError(`${command}: unexpected argument '${parsed.positionals[positionals.length]}'; ${hint}`);
  }
  if (parsed.positionals.length < required.length) {
    throw new UsageError(`${command}: missing ${required[parsed.positionals.length]}; ${hint}`);
  }
  return parsed;
}

/** parseArgs' messages span lines and suggest things; this keeps the fault and the option's name. */
function describeParseError(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  const option = message.match(/--[A-Za-z0-9][A-Za-z0-9-]*/)?.[0] ?? message.match(/'(-[^'\s,]+)/)?.[1] ?? "?";
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") return `unknown option '${option}'`;
  if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
    if (message.includes("does not take an argument")) return `option '${option}' takes no value`;
    // "ambiguous": the next word starts with a dash, so it was not taken as the value.
    if (message.includes("ambiguous")) return `option '${option}' needs a value (for one that starts with a dash, write ${option}=-…)`;
    return `option '${option}' needs a value`;
  }
  return message.replace(/\s*\n\s*/g, " ");
}

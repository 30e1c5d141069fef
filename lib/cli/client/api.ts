// The user commands' HTTP client: JSON requests to the API with the bearer token, each failure
// turned into one line and the exit code a script can tell apart (docs/cli.md "Exit codes").
import type { Remote } from "./config.ts";

/** Exit codes of the user commands; the build's result where a command follows one. */
export const EXIT = { succeeded: 0, failed: 1, usage: 2, canceled: 3, refused: 4, unreachable: 5, checksum: 6 } as const;

/** A failure that ends the command: its one line goes to stderr, its code is the exit code. */
export class CommandFailure extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

export class Api {
  constructor(readonly remote: Remote) {}

  /** A JSON request; the parsed answer, or a CommandFailure with the API's {code, message}. */
  async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await this.fetch(path, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok) throw await refusal(response, `${method} ${path}`);
    return (await response.json()) as T;
  }

  /** A request with the bearer token; only a transport failure (no answer at all) throws. */
  async fetch(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    headers.set("authorization", `Bearer ${this.remote.token}`);
    headers.set("accept", headers.get("accept") ?? "application/json");
    try {
      return await fetch(this.remote.url + path, { ...init, headers, redirect: "manual" });
    } catch (error) {
      throw unreachable(this.remote.url, error);
    }
  }
}

export function unreachable(url: string, error: unknown): CommandFailure {
  const reason = (error as { code?: string }).code ?? (error instanceof Error ? error.message : String(error));
  return new CommandFailure(`roost: cannot reach Roost at ${url} (${reason})`, EXIT.unreachable);
}

/** The API's error body as one line: "roost: <code>: <message>", with a hint where the fix is on this side. */
export async function refusal(response: Response, what: string): Promise<CommandFailure> {
  const text = await response.text();
  let code = `http_${response.status}`;
  let message = text.slice(0, 200) || response.statusText;
  try {
    const body = JSON.parse(text) as { code?: unknown; message?: unknown };
    if (typeof body.code === "string") code = body.code;
    if (typeof body.message === "string") message = body.message;
  } catch {
    message = `${what} answered ${response.status} without a Roost error body (is ROOST_URL a Roost instance?)`;
  }
  const hint = response.status === 401 ? " (check ROOST_TOKEN or the config file's token)" : "";
  return new CommandFailure(`roost: ${code}: ${message}${hint}`, EXIT.refused);
}

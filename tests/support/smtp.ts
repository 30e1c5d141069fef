// A real SMTP server for the e-mail notification tests: aiosmtpd (tests/support/smtp-server.py)
// with STARTTLS on a certificate made here by openssl and AUTH for one user, writing every message
// it accepts as a JSON line the tests read back.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const SMTP_USER = "roost";
export const SMTP_PASSWORD = "smtp-password";

export interface SmtpServer {
  port: number;
  /** The server's certificate, for a notification's tls_ca. */
  certPem: string;
  /** The messages accepted so far: mail_from, rcpt_tos, tls, auth_user, subject, headers, body. */
  mail(): any[];
  /** An e-mail notification's settings for this server (STARTTLS, AUTH), with its recipients. */
  settings(to: string[]): Record<string, unknown>;
  stop(): void;
}

export async function startSmtpServer(): Promise<SmtpServer> {
  const dir = mkdtempSync(join(tmpdir(), "roost-smtp-"));
  const key = join(dir, "key.pem");
  const cert = join(dir, "cert.pem");
  const made = Bun.spawnSync(
    [
      "openssl",
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-days",
      "1",
      "-subj",
      "/CN=127.0.0.1",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
      "-keyout",
      key,
      "-out",
      cert,
    ],
    { stderr: "pipe" },
  );
  if (made.exitCode !== 0) throw new Error(`openssl failed: ${made.stderr.toString()}`);
  const python = existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  const file = join(dir, "mail.jsonl");
  const proc = Bun.spawn([python, join(import.meta.dir, "smtp-server.py"), file, cert, key, SMTP_USER, SMTP_PASSWORD], {
    stdin: "pipe",
    stdout: "pipe",
    stderr: "inherit",
  });
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  let text = "";
  while (!/ready \d+/.test(text)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`smtp server exited: ${text}`);
    text += new TextDecoder().decode(value);
  }
  const port = Number(/ready (\d+)/.exec(text)![1]);
  const certPem = readFileSync(cert, "utf8");
  return {
    port,
    certPem,
    mail: () =>
      existsSync(file)
        ? readFileSync(file, "utf8")
            .trim()
            .split("\n")
            .map((l) => JSON.parse(l))
        : [],
    settings: (to) => ({
      host: "127.0.0.1",
      port,
      security: "starttls",
      username: SMTP_USER,
      password: SMTP_PASSWORD,
      from: "roost@example.test",
      to,
      tls_ca: certPem,
    }),
    stop() {
      proc.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// The setup token file: like Jenkins' initialAdminPassword, the first-run credential is written
// where only someone with access to the host can read it (0600 in the 0700 data dir). Its path,
// never its content, is logged.
import { join } from "node:path";
import { rename, rm, writeFile } from "node:fs/promises";

export const SETUP_TOKEN_FILE = "setup-token";

export function setupTokenPath(dataDir: string): string {
  return join(dataDir, SETUP_TOKEN_FILE);
}

/** Written to a private temp file and renamed into place, so two daemons starting together never collide. */
export async function writeSetupTokenFile(dataDir: string, token: string): Promise<string> {
  const path = setupTokenPath(dataDir);
  const temp = `${path}.${process.pid}.${crypto.randomUUID()}`;
  await writeFile(temp, token + "\n", { mode: 0o600, flag: "wx" });
  await rename(temp, path);
  return path;
}

export async function removeSetupTokenFile(dataDir: string): Promise<void> {
  await rm(setupTokenPath(dataDir), { force: true });
}

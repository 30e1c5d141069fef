// A STAND-IN for `xcrun altool --upload-app`, for tests only: these machines have no Xcode and
// cannot reach Apple. It takes the arguments altool(1) documents
// (https://keith.github.io/xcode-man-pages/altool.1.html: --upload-app -f <file> -t <platform>
// --apiKey <key id> --apiIssuer <issuer id> --output-format json), looks for the key where
// altool does (AuthKey_<key id>.p8 in $API_PRIVATE_KEYS_DIR, then ./private_keys,
// ~/private_keys, ~/.private_keys, ~/.appstoreconnect/private_keys), reads the IPA's Info.plist
// (with Python's zipfile and plistlib, independently of Roost's own reader), signs a token with the
// key and reports the upload to the App Store Connect stand-in (app-store-connect.ts), printing
// its answer as altool's JSON output and exiting 1 on a refusal.
//
// Run as a script through the wrapper altoolStandIn() writes, which names the stand-in's URL.
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { SignJWT, importPKCS8 } from "jose";

/** Writes an executable `altool` into `dir` that runs this stand-in against `ascUrl`; returns its path. */
export function altoolStandIn(dir: string, ascUrl: string, bun: string): string {
  const path = join(dir, "altool");
  writeFileSync(
    path,
    `#!/bin/sh\n# The altool STAND-IN of tests/support/store-stand-ins/altool.ts, for tests only.\nROOST_ALTOOL_STAND_IN_URL=${JSON.stringify(ascUrl)} exec ${JSON.stringify(bun)} ${JSON.stringify(import.meta.path)} "$@"\n`,
  );
  chmodSync(path, 0o755);
  return path;
}

function fail(message: string, code = -1): never {
  process.stdout.write(JSON.stringify({ "tool-version": "stand-in", "product-errors": [{ code, message }] }) + "\n");
  process.exit(1);
}

async function main(args: string[]): Promise<void> {
  const value = (flag: string) => {
    const i = args.indexOf(flag);
    return i >= 0 ? args[i + 1] : undefined;
  };
  if (!args.includes("--upload-app")) fail("the stand-in only knows --upload-app");
  const file = value("-f") ?? value("--file");
  const keyId = value("--apiKey");
  const issuer = value("--apiIssuer");
  if (!file || !existsSync(file)) fail(`Could not find the file '${file}'.`);
  if (!keyId || !issuer) fail("--apiKey and --apiIssuer are required.");
  if ((value("-t") ?? value("--type")) !== "ios") fail("the stand-in uploads iOS apps only (-t ios).");
  const dirs = [
    process.env.API_PRIVATE_KEYS_DIR,
    "./private_keys",
    join(homedir(), "private_keys"),
    join(homedir(), ".private_keys"),
    join(homedir(), ".appstoreconnect/private_keys"),
  ].filter((d): d is string => Boolean(d));
  const keyFile = dirs.map((d) => join(d, `AuthKey_${keyId}.p8`)).find(existsSync);
  if (!keyFile) fail(`Failed to find API key 'AuthKey_${keyId}.p8' in: ${dirs.join(", ")}.`, -1010);
  const plist = Bun.spawnSync([
    "python3",
    "-c",
    "import json,plistlib,re,sys,zipfile\nz=zipfile.ZipFile(sys.argv[1])\nn=[x for x in z.namelist() if re.match(r'^Payload/[^/]+\\.app/Info\\.plist$', x)]\np=plistlib.loads(z.read(n[0]))\nprint(json.dumps({k: p.get(k) for k in ['CFBundleIdentifier','CFBundleVersion','CFBundleShortVersionString']}))",
    file!,
  ]);
  if (plist.exitCode !== 0) fail(`The IPA is invalid: ${plist.stderr.toString().trim().split("\n").pop()}`);
  const info = JSON.parse(plist.stdout.toString()) as Record<string, string>;
  const key = await importPKCS8(readFileSync(keyFile!, "utf8"), "ES256");
  const now = Math.floor(Date.now() / 1000);
  const token = await new SignJWT({})
    .setProtectedHeader({ alg: "ES256", kid: keyId!, typ: "JWT" })
    .setIssuer(issuer!)
    .setAudience("appstoreconnect-v1")
    .setIssuedAt(now)
    .setExpirationTime(now + 600)
    .sign(key);
  const res = await fetch(`${process.env.ROOST_ALTOOL_STAND_IN_URL}/stand-in/uploads`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({
      file: file!.split("/").pop(),
      keyId,
      bundleId: info.CFBundleIdentifier,
      version: info.CFBundleVersion,
      shortVersion: info.CFBundleShortVersionString,
    }),
  });
  const answer = (await res.json()) as Record<string, unknown>;
  if (res.status === 401) fail(`Unable to authenticate. (${JSON.stringify(answer)})`, -19209);
  process.stdout.write(JSON.stringify({ "tool-version": "stand-in", ...answer }) + "\n");
  process.exit(res.ok ? 0 : 1);
}

if (import.meta.main) await main(process.argv.slice(2));

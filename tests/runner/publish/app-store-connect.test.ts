// The App Store Connect client (runner/publish/app-store-connect.ts) against the App Store
// Connect stand-in and the altool stand-in: the ES256 API token, the upload with altool, waiting
// for processing, What to Test, beta groups and beta review; a retry that uploads nothing Apple
// has; the usual refusals in words. And the IPA reader (runner/publish/ipa-info.ts) on IPAs that
// Python's zipfile and plistlib wrote.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startAppStoreConnectStandIn, type AppStoreConnectStandIn, type AscKey } from "../../support/store-stand-ins/app-store-connect.ts";
import { altoolStandIn } from "../../support/store-stand-ins/altool.ts";
import { publishAppStoreConnect } from "../../../runner/publish/app-store-connect.ts";
import { readIpaInfo } from "../../../runner/publish/ipa-info.ts";
import { BUN } from "../../helpers/daemon.ts";
import { runPublish } from "./context.ts";
import { writeIpa } from "./ipa.ts";

const work = mkdtempSync(join(tmpdir(), "roost-asc-test-"));
let asc: AppStoreConnectStandIn;
let key: AscKey;
let altool: string;
beforeAll(async () => {
  asc = await startAppStoreConnectStandIn();
  key = await asc.key();
  asc.addApp("1234567890", "com.example.app", ["QA", "Friends"]);
  altool = altoolStandIn(work, asc.url, BUN);
});
afterAll(async () => {
  await asc.stop();
  rmSync(work, { recursive: true, force: true });
});

const publisher = (more: Record<string, unknown> = {}) => ({
  type: "app_store_connect",
  environment: "testflight",
  app_id: "1234567890",
  key_id: key.keyId,
  issuer_id: key.issuerId,
  private_key: "ASC_KEY",
  processing_timeout_seconds: 60,
  ...more,
});

async function publish(ipa: string, more: Record<string, unknown> = {}, notes: Record<string, string> = {}, p8 = key.p8) {
  return runPublish(publishAppStoreConnect, {
    publisher: publisher(more),
    files: { "build/ios/ipa/Runner.ipa": readFileSync(ipa) },
    secrets: { ASC_KEY: p8 },
    notes,
    endpoints: { appStoreConnect: asc.url, altool: [altool] },
  });
}

describe("the IPA reader", () => {
  test("reads the bundle id and versions from a binary or XML Info.plist, stored or deflated", () => {
    for (const [format, compress] of [
      ["binary", true],
      ["xml", false],
      ["xml", true],
      ["binary", false],
    ] as const) {
      const file = writeIpa(work, `r-${format}-${compress}.ipa`, { bundleId: "com.example.app", version: "42", shortVersion: "1.2.3" }, format, compress);
      expect(readIpaInfo(file)).toEqual({ bundleId: "com.example.app", version: "42", shortVersion: "1.2.3" });
    }
  });
});

describe("App Store Connect", () => {
  test("uploads with altool, waits for processing, sets What to Test, adds the groups and submits for beta review", async () => {
    const ipa = writeIpa(work, "a.ipa", { bundleId: "com.example.app", version: "7", shortVersion: "1.0.0" });
    const { answer, lines } = await publish(
      ipa,
      { beta_groups: ["QA", "Friends"], submit_for_review: true },
      { "en-US": "Try the new login", "de-DE": "Neue Anmeldung testen" },
    );
    expect(answer).toEqual({
      summary: "TestFlight has 1.0.0 (7) of app 1234567890, in QA, Friends, submitted for beta review",
      version: "1.0.0 (7)",
      url: "https://appstoreconnect.apple.com/apps/1234567890/testflight/ios",
      details: { build_id: expect.any(String), bundle_id: "com.example.app" },
    });
    expect(asc.uploads).toEqual([{ app: "1234567890", version: "7", shortVersion: "1.0.0", keyId: key.keyId }]);
    const build = asc.builds.find((b) => b.version === "7")!;
    expect(build).toMatchObject({ processingState: "VALID", submitted: true });
    expect([...build.groups].sort()).toEqual(["group-1234567890-0", "group-1234567890-1"]);
    expect(Object.fromEntries([...build.whatToTest].map(([l, v]) => [l, v.text]))).toEqual({ "en-US": "Try the new login", "de-DE": "Neue Anmeldung testen" });
    const text = lines.join("\n");
    expect(text).toContain("[app store connect] build/ios/ipa/Runner.ipa: com.example.app 1.0.0 (7)");
    expect(text).toContain('[altool] {"tool-version":"stand-in","success-message":"No errors uploading');
    expect(text).toContain("[app store connect] build 1.0.0 (7): PROCESSING");
    expect(text).toContain("[app store connect] build 1.0.0 (7): VALID");
    expect(text).not.toContain("BEGIN PRIVATE KEY");
  });

  test("a retry uploads nothing Apple has, updates What to Test in place and does not submit twice", async () => {
    const ipa = writeIpa(work, "a2.ipa", { bundleId: "com.example.app", version: "7", shortVersion: "1.0.0" });
    const { answer, lines } = await publish(ipa, { beta_groups: ["QA"], submit_for_review: true }, { "en-US": "Try the new login again" });
    expect((answer as { version: string }).version).toBe("1.0.0 (7)");
    expect(asc.uploads.length).toBe(1);
    const build = asc.builds.find((b) => b.version === "7")!;
    expect(build.whatToTest.get("en-US")!.text).toBe("Try the new login again");
    expect(build.whatToTest.size).toBe(2);
    const text = lines.join("\n");
    expect(text).toContain("build 1.0.0 (7) is already in App Store Connect: not uploaded again");
    expect(text).toContain("already submitted for beta App Review");
  });

  test("the usual refusals, in words: an unknown group, a key Apple does not know, a build Apple could not process", async () => {
    const ipa = writeIpa(work, "b.ipa", { bundleId: "com.example.app", version: "8", shortVersion: "1.0.0" });
    const group = await publish(ipa, { beta_groups: ["Nobody"] });
    expect((group.answer as Error).message).toBe("app 1234567890 has no TestFlight group Nobody (it has none of those); create it in App Store Connect first");
    const stranger = await (async () => {
      const other = await startAppStoreConnectStandIn();
      try {
        return (await other.key()).p8;
      } finally {
        await other.stop();
      }
    })();
    const badKey = await publish(ipa, {}, {}, stranger);
    expect((badKey.answer as Error).message).toStartWith(
      `App Store Connect refused the API key ${key.keyId} (issuer ${key.issuerId}): is it revoked, or the .p8 another key's? App Store Connect said: 401 Provide a properly configured and signed bearer token`,
    );
    asc.processing = "FAILED";
    const failed = await publish(writeIpa(work, "c.ipa", { bundleId: "com.example.app", version: "9", shortVersion: "1.0.0" }));
    asc.processing = "VALID";
    expect((failed.answer as Error).message).toBe("Apple could not process build 1.0.0 (9): FAILED; App Store Connect's e-mail to the account holder says why");
    const foreign = await publish(writeIpa(work, "d.ipa", { bundleId: "com.example.other", version: "1", shortVersion: "1.0.0" }));
    expect((foreign.answer as Error).message).toBe(
      "altool could not upload the IPA (exit code 1): No suitable application records were found. Verify your bundle identifier 'com.example.other' is correct.",
    );
  });
});

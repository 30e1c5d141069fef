// The Google Play client (runner/publish/google-play.ts) against the Google stand-in: the JWT
// bearer grant, the edits flow with a staged rollout and release notes, no second upload of bytes
// Play has, no second release on a retry, and the store's usual refusals in words.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startGoogleStandIn, type GoogleStandIn, type ServiceAccount } from "../../support/store-stand-ins/google.ts";
import { publishGooglePlay } from "../../../runner/publish/google-play.ts";
import { runPublish } from "./context.ts";

let google: GoogleStandIn;
let releaser: ServiceAccount;
let outsider: ServiceAccount;
beforeAll(async () => {
  google = await startGoogleStandIn();
  releaser = await google.serviceAccount("releaser");
  outsider = await google.serviceAccount("outsider");
  google.play.addApp("com.example.app", [releaser.client_email]);
});
afterAll(() => google.stop());

const BASE = { type: "google_play", environment: "production", package_name: "com.example.app", credentials: "PLAY_KEY" };

async function publish(publisher: Record<string, unknown>, files: Record<string, string>, key = releaser, notes: Record<string, string> = {}) {
  return runPublish(publishGooglePlay, {
    publisher: { ...BASE, ...publisher },
    files,
    secrets: { PLAY_KEY: key.json },
    notes,
    endpoints: { androidPublisher: google.url },
  });
}

describe("Google Play", () => {
  test("a bundle goes to a track as a staged rollout with notes per language, through one committed edit", async () => {
    const commits = google.play.commits;
    const { answer, lines } = await publish(
      { track: "beta", user_fraction: 0.25 },
      { "build/app/outputs/bundle/release/app-release.aab": "bundle versionCode=10" },
      releaser,
      { "en-US": "Faster start", "de-DE": "Schnellerer Start" },
    );
    expect(answer).toEqual({
      summary: "Google Play has version code 10 on track beta (inProgress, 25 % of users)",
      version: "10",
      url: null,
      details: { package_name: "com.example.app", track: "beta", status: "inProgress", edit_id: expect.any(String) },
    });
    expect(google.play.track("com.example.app", "beta")).toEqual([
      {
        versionCodes: ["10"],
        status: "inProgress",
        userFraction: 0.25,
        releaseNotes: [
          { language: "en-US", text: "Faster start" },
          { language: "de-DE", text: "Schnellerer Start" },
        ],
      },
    ]);
    expect(google.play.commits).toBe(commits + 1);
    expect(google.play.uploads.filter((u) => u.version_code === 10)).toEqual([
      {
        package_name: "com.example.app",
        kind: "bundles",
        version_code: 10,
        sha256: new Bun.CryptoHasher("sha256").update("bundle versionCode=10").digest("hex"),
        size: 21,
        by: releaser.client_email,
      },
    ]);
    // The token Google handed out and the signed assertion never reach the log.
    const text = lines.join("\n");
    expect(text).toContain("[google oauth] access token for releaser@stand-in-project.iam.gserviceaccount.com (androidpublisher), valid 3599 s");
    expect(text).toContain("[google play] uploaded build/app/outputs/bundle/release/app-release.aab: version code 10");
    expect(text).not.toContain("ya29.");
    expect(text).not.toContain("PRIVATE KEY");
  });

  test("a retry uploads nothing Play has and makes no second release", async () => {
    const before = { uploads: google.play.uploads.length, commits: google.play.commits };
    const { answer, lines } = await publish({ track: "beta", user_fraction: 0.25 }, { "app.aab": "bundle versionCode=10" }, releaser, {
      "en-US": "Faster start",
      "de-DE": "Schnellerer Start",
    });
    expect((answer as { summary: string }).summary).toBe("Google Play already had version code 10 on track beta (inProgress, 25 % of users)");
    expect(google.play.uploads.length).toBe(before.uploads);
    expect(google.play.commits).toBe(before.commits);
    expect(lines.join("\n")).toContain("app.aab is already in Play as version code 10 (same SHA-256): not uploaded again");
  });

  test("promoting the same bytes to production reuses the version code: no upload, one new release", async () => {
    const before = google.play.uploads.length;
    const { answer } = await publish({ track: "production" }, { "app.aab": "bundle versionCode=10" });
    expect((answer as { summary: string }).summary).toBe("Google Play has version code 10 on track production (completed)");
    expect(google.play.uploads.length).toBe(before);
    expect(google.play.track("com.example.app", "production")).toEqual([{ versionCodes: ["10"], status: "completed" }]);
  });

  test("APKs go up when there is no bundle", async () => {
    const { answer } = await publish(
      { track: "internal", artifact: "**/*.apk" },
      { "app-arm64.apk": "apk versionCode=21", "app-x86_64.apk": "apk versionCode=22" },
    );
    expect((answer as { version: string }).version).toBe("21,22");
    expect(google.play.track("com.example.app", "internal")).toEqual([{ versionCodes: ["21", "22"], status: "completed" }]);
  });

  test("the store's usual refusals fail with its message, in words, and the edit is discarded", async () => {
    const used = await publish({ track: "internal" }, { "app.aab": "another bundle, same versionCode=10" });
    expect((used.answer as Error).message).toBe(
      "this version code was already used for another upload of com.example.app; raise the build number (e.g. flutter build appbundle --build-number=$ROOST_BUILD_NUMBER). Google Play said: 403 Version code 10 has already been used.",
    );
    expect(used.lines.join("\n")).toMatch(/DELETE \/androidpublisher\/v3\/applications\/com\.example\.app\/edits\/\d+ → 204/);
    const unknown = await publish({ package_name: "com.example.unknown" }, { "app.aab": "bundle versionCode=1" });
    expect((unknown.answer as Error).message).toBe(
      "Google Play does not know the package com.example.unknown: create the app in the Play Console and upload its first bundle there by hand (docs/publishing.md). Google Play said: 404 Package not found: com.example.unknown.",
    );
    const denied = await publish({}, { "app.aab": "bundle versionCode=99" }, outsider);
    expect((denied.answer as Error).message).toBe(
      "the service account may not release com.example.app: invite it in the Play Console (Users and permissions) with the release permissions (docs/publishing.md). Google Play said: 403 The caller does not have permission",
    );
  });

  test("a key whose signature Google cannot verify is refused at the token endpoint", async () => {
    const forged = JSON.parse(releaser.json);
    forged.private_key = JSON.parse(outsider.json).private_key;
    const { answer } = await publish({}, { "app.aab": "bundle versionCode=98" }, { client_email: releaser.client_email, json: JSON.stringify(forged) });
    expect((answer as Error).message).toStartWith(`Google refused the service account ${releaser.client_email}: Invalid JWT Signature.`);
    expect((answer as Error).message).toEndWith("(is the key revoked, or the runner's clock wrong?)");
  });
});

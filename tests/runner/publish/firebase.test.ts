// The Firebase App Distribution client (runner/publish/firebase.ts) against the Google stand-in:
// the upload's long-running operation polled to its end, notes, distribution, no second release
// of bytes Firebase has, and the usual refusals in words.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startGoogleStandIn, type GoogleStandIn, type ServiceAccount } from "../../support/store-stand-ins/google.ts";
import { publishFirebase } from "../../../runner/publish/firebase.ts";
import { runPublish } from "./context.ts";

const APP = "1:555000111222:android:00aa11bb22cc33dd";
let google: GoogleStandIn;
let distributor: ServiceAccount;
let outsider: ServiceAccount;
beforeAll(async () => {
  google = await startGoogleStandIn();
  distributor = await google.serviceAccount("distributor");
  outsider = await google.serviceAccount("outsider");
  google.firebase.addApp(APP, [distributor.client_email], ["qa"]);
});
afterAll(() => google.stop());

async function publish(more: Record<string, unknown>, apk: string, key = distributor) {
  return runPublish(publishFirebase, {
    publisher: { type: "firebase_app_distribution", environment: "qa", app_id: APP, credentials: "FB", ...more },
    files: { "app-release.apk": apk },
    secrets: { FB: key.json },
    notes: { "en-US": "Please try the checkout" },
    endpoints: { firebaseAppDistribution: google.url },
  });
}

describe("Firebase App Distribution", () => {
  test("uploads, waits for the operation, sets the notes and distributes; the same bytes again make no new release", async () => {
    const first = await publish({ testers: ["a@example.com"], groups: ["qa"] }, "apk versionName=2.1.0 versionCode=31");
    expect(first.answer).toMatchObject({
      summary: `Firebase App Distribution has 2.1.0 (31) of ${APP}, distributed`,
      version: "2.1.0 (31)",
      details: { result: "RELEASE_CREATED" },
    });
    expect(google.firebase.releases(APP)).toEqual([
      expect.objectContaining({
        displayVersion: "2.1.0",
        buildVersion: "31",
        releaseNotes: { text: "Please try the checkout" },
        testers: ["a@example.com"],
        groups: ["qa"],
      }),
    ]);
    expect(first.lines.filter((l) => l.includes("/operations/")).length).toBe(2);
    const again = await publish({ testers: ["a@example.com"] }, "apk versionName=2.1.0 versionCode=31");
    expect(again.answer).toMatchObject({ details: { result: "RELEASE_UNMODIFIED" } });
    expect(google.firebase.releases(APP).length).toBe(1);
    expect(again.lines.join("\n")).toContain("Firebase already had these bytes: no new release");
  });

  test("refusals: a group Firebase does not have, a service account without the role, an unknown app", async () => {
    const group = await publish({ groups: ["nobody"] }, "apk versionCode=32");
    expect((group.answer as Error).message).toBe("Firebase refused the testers or groups: Firebase said: 400 Group not found: nobody.");
    const denied = await publish({}, "apk versionCode=33", outsider);
    expect((denied.answer as Error).message).toBe(
      `the service account may not distribute ${APP}: give it the Firebase App Distribution Admin role (docs/publishing.md). Firebase said: 403 The caller does not have permission`,
    );
    const unknown = await publish({ app_id: "1:555000111222:android:ffff" }, "apk versionCode=34");
    expect((unknown.answer as Error).message).toBe(
      "Firebase does not know the app 1:555000111222:android:ffff (check app_id in the Firebase console's project settings). Firebase said: 404 App not found: 1:555000111222:android:ffff",
    );
  });
});

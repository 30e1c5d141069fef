// Firebase App Distribution through its REST API
// (https://firebase.google.com/docs/reference/app-distribution/rest,
//  https://firebase.google.com/docs/app-distribution/android/distribute-rest-api):
//  1. upload the APK, AAB or IPA: POST /upload/v1/projects/{number}/apps/{app_id}/releases:upload
//     (X-Goog-Upload-Protocol: raw) answers a long-running operation;
//  2. poll it (GET /v1/{operation}) until done: its response names the release, and says
//     RELEASE_CREATED, RELEASE_UPDATED, or RELEASE_UNMODIFIED when Firebase already had these
//     bytes (a retry or a promotion makes no second release);
//  3. the release notes: PATCH /v1/{release}?updateMask=release_notes.text;
//  4. distribute to testers and groups: POST /v1/{release}:distribute.
// Authenticated as a service account with the Firebase App Distribution Admin role (google-auth.ts).
import { readFileSync } from "node:fs";
import type { FirebaseConfig } from "../../lib/publishing/publishers.ts";
import type { StoreAnswer } from "../../lib/publishing/wire.ts";
import { PublishFailure, type PublishContext } from "./context.ts";
import { googleAccessToken, readServiceAccount } from "./google-auth.ts";
import { storeRequest, StoreRefusal } from "./http.ts";
import { limitNotes } from "./notes.ts";

const SCOPE = "https://www.googleapis.com/auth/cloud-platform";
/** Release notes are at most 16,000 characters (Release.releaseNotes, the REST reference). */
const NOTES_MAX = 16_000;
const POLL_MS = 1000;
const POLL_LIMIT_MS = 10 * 60_000;

interface Release {
  name: string;
  displayVersion?: string;
  buildVersion?: string;
  firebaseConsoleUri?: string;
  testingUri?: string;
}
interface Operation {
  name: string;
  done?: boolean;
  error?: { code?: number; message?: string };
  response?: { result?: string; release?: Release };
}

export async function publishFirebase(ctx: PublishContext): Promise<StoreAnswer> {
  const p = ctx.publisher as FirebaseConfig;
  const key = readServiceAccount(ctx.secret(p.credentials).text, p.credentials);
  const token = await googleAccessToken(ctx, key, SCOPE);
  const auth = { authorization: `Bearer ${token}` };
  const projectNumber = p.app_id.split(":")[1]!;
  const app = `projects/${projectNumber}/apps/${p.app_id}`;
  const binary = ctx.artifacts.find((a) => a.role === "binary")!;
  try {
    let op = await storeRequest<Operation>(ctx, "firebase", `${ctx.endpoints.firebaseAppDistribution}/upload/v1/${app}/releases:upload`, {
      method: "POST",
      headers: {
        ...auth,
        "content-type": "application/octet-stream",
        "x-goog-upload-protocol": "raw",
        "x-goog-upload-file-name": binary.path.split("/").pop()!,
      },
      body: readFileSync(binary.file),
      timeoutMs: 30 * 60_000,
      label: `/upload/v1/${app}/releases:upload (${binary.path}, ${binary.size} bytes)`,
    });
    const deadline = Date.now() + POLL_LIMIT_MS;
    while (!op.done) {
      if (Date.now() > deadline)
        throw new PublishFailure(`Firebase did not finish processing ${binary.path} within ${POLL_LIMIT_MS / 60_000} minutes (operation ${op.name})`);
      await Bun.sleep(POLL_MS);
      op = await storeRequest<Operation>(ctx, "firebase", `${ctx.endpoints.firebaseAppDistribution}/v1/${op.name}`, { headers: auth });
    }
    if (op.error) throw new PublishFailure(`Firebase could not take ${binary.path}: ${op.error.message ?? `error ${op.error.code}`}`);
    const release = op.response?.release;
    if (!release?.name) throw new PublishFailure("Firebase finished the upload without naming its release");
    const result = op.response?.result ?? "RELEASE_CREATED";
    ctx.log(
      `[firebase] ${result === "RELEASE_UNMODIFIED" ? "Firebase already had these bytes: no new release" : result === "RELEASE_UPDATED" ? "an existing release was updated" : "release created"}: ${release.displayVersion ?? "?"} (${release.buildVersion ?? "?"})`,
    );

    const notes = limitNotes(ctx.notes, NOTES_MAX, ctx.log, "Firebase");
    const text = notes[p.notes?.language ?? "en-US"] ?? Object.values(notes)[0];
    if (text) {
      await storeRequest(ctx, "firebase", `${ctx.endpoints.firebaseAppDistribution}/v1/${release.name}?updateMask=release_notes.text`, {
        method: "PATCH",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ name: release.name, releaseNotes: { text } }),
        label: `/v1/${release.name} (release notes)`,
      });
    }
    if (p.testers.length || p.groups.length) {
      await storeRequest(ctx, "firebase", `${ctx.endpoints.firebaseAppDistribution}/v1/${release.name}:distribute`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ testerEmails: p.testers, groupAliases: p.groups }),
      });
      ctx.log(
        `[firebase] distributed to ${[p.testers.length ? `${p.testers.length} tester(s)` : "", p.groups.length ? `group(s) ${p.groups.join(", ")}` : ""].filter(Boolean).join(" and ")}`,
      );
    }
    return {
      summary: `Firebase App Distribution has ${release.displayVersion ?? "the release"} (${release.buildVersion ?? "?"}) of ${p.app_id}${p.testers.length || p.groups.length ? ", distributed" : ""}`,
      version: release.displayVersion && release.buildVersion ? `${release.displayVersion} (${release.buildVersion})` : (release.buildVersion ?? null),
      url: release.firebaseConsoleUri ?? null,
      details: { release: release.name, result },
    };
  } catch (error) {
    if (!(error instanceof StoreRefusal) || error.status === 0) throw error;
    const said = `Firebase said: ${error.status} ${error.storeMessage}`;
    if (error.status === 404)
      throw new PublishFailure(`Firebase does not know the app ${p.app_id} (check app_id in the Firebase console's project settings). ${said}`);
    if (error.status === 401 || error.status === 403)
      throw new PublishFailure(
        `the service account may not distribute ${p.app_id}: give it the Firebase App Distribution Admin role (docs/publishing.md). ${said}`,
      );
    if (error.status === 400 && /tester|group/i.test(error.storeMessage)) throw new PublishFailure(`Firebase refused the testers or groups: ${said}`);
    throw new PublishFailure(said);
  }
}

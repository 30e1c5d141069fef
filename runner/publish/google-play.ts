// Google Play through the Android Publisher API v3 edits flow
// (https://developers.google.com/android-publisher/edits): every change is made in an edit, which
// is committed whole or discarded.
//  1. edits.insert                      POST   /androidpublisher/v3/applications/{pkg}/edits
//  2. edits.bundles.list / apks.list    GET    …/edits/{id}/bundles | /apks
//     A file whose SHA-256 Play already has is not uploaded again: its version code is reused
//     (a retry after a lost answer, a promotion). Play refuses a second upload of a version code
//     (https://developers.google.com/android-publisher/api-ref/rest/v3/edits.bundles/upload).
//  3. edits.bundles.upload / apks.upload POST  /upload/androidpublisher/v3/…/edits/{id}/bundles?uploadType=media
//  4. edits.tracks.get                  GET    …/edits/{id}/tracks/{track}
//     When the track already has exactly this release, nothing is committed: a retry does not
//     make a second release.
//  5. edits.tracks.update               PUT    …/edits/{id}/tracks/{track}
//     {track, releases: [{versionCodes, status, userFraction, releaseNotes: [{language, text}]}]}
//     (https://developers.google.com/android-publisher/api-ref/rest/v3/edits.tracks#Release)
//  6. edits.commit                      POST   …/edits/{id}:commit
// On any refusal the edit is deleted (edits.delete) and the store's message fails the step, in
// words for the usual refusals: a version code already used, a package Play does not know (the
// app's first upload must be made in the Play Console), a service account without permission.
import { readFileSync } from "node:fs";
import type { GooglePlayConfig } from "../../lib/publishing/publishers.ts";
import type { StoreAnswer } from "../../lib/publishing/wire.ts";
import { PublishFailure, type PublishContext } from "./context.ts";
import { googleAccessToken, readServiceAccount } from "./google-auth.ts";
import { storeRequest, StoreRefusal } from "./http.ts";
import { limitNotes } from "./notes.ts";

const SCOPE = "https://www.googleapis.com/auth/androidpublisher";
/** Play's limit per language (https://support.google.com/googleplay/android-developer/answer/9859348). */
const NOTES_MAX = 500;

interface Release {
  name?: string;
  versionCodes?: string[];
  status?: string;
  userFraction?: number;
  releaseNotes?: { language: string; text: string }[];
}

export async function publishGooglePlay(ctx: PublishContext): Promise<StoreAnswer> {
  const p = ctx.publisher as GooglePlayConfig;
  const key = readServiceAccount(ctx.secret(p.credentials).text, p.credentials);
  const token = await googleAccessToken(ctx, key, SCOPE);
  const api = `${ctx.endpoints.androidPublisher}/androidpublisher/v3/applications/${encodeURIComponent(p.package_name)}`;
  const upload = `${ctx.endpoints.androidPublisher}/upload/androidpublisher/v3/applications/${encodeURIComponent(p.package_name)}`;
  const auth = { authorization: `Bearer ${token}` };
  const json = { ...auth, "content-type": "application/json" };
  const binaries = ctx.artifacts.filter((a) => a.role === "binary");
  const bundle = binaries.every((a) => a.path.toLowerCase().endsWith(".aab"));

  let editId: string;
  try {
    editId = (await storeRequest<{ id: string }>(ctx, "google play", `${api}/edits`, { method: "POST", headers: json, body: "{}" })).id;
  } catch (error) {
    throw explain(error, p);
  }
  ctx.log(`[google play] edit ${editId} opened for ${p.package_name}`);
  try {
    // 2-3. The binaries: reused when Play has their bytes, uploaded otherwise.
    const kind = bundle ? "bundles" : "apks";
    const listed = await storeRequest<{ bundles?: { versionCode: number; sha256: string }[]; apks?: { versionCode: number; binary?: { sha256?: string } }[] }>(
      ctx,
      "google play",
      `${api}/edits/${editId}/${kind}`,
      { headers: auth },
    );
    const known = new Map<string, number>();
    for (const b of listed.bundles ?? []) known.set(b.sha256, b.versionCode);
    for (const a of listed.apks ?? []) if (a.binary?.sha256) known.set(a.binary.sha256, a.versionCode);
    const versionCodes: number[] = [];
    for (const a of binaries) {
      const had = known.get(a.sha256);
      if (had !== undefined) {
        ctx.log(`[google play] ${a.path} is already in Play as version code ${had} (same SHA-256): not uploaded again`);
        versionCodes.push(had);
        continue;
      }
      const uploaded = await storeRequest<{ versionCode: number; sha256?: string }>(ctx, "google play", `${upload}/edits/${editId}/${kind}?uploadType=media`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/octet-stream" },
        body: readFileSync(a.file),
        timeoutMs: 30 * 60_000,
        label: `${new URL(`${upload}/edits/${editId}/${kind}`).pathname} (${a.path}, ${a.size} bytes)`,
      });
      ctx.log(`[google play] uploaded ${a.path}: version code ${uploaded.versionCode}`);
      versionCodes.push(uploaded.versionCode);
    }

    // 4-5. The track's release.
    const status = p.release_status ?? (p.user_fraction !== undefined ? "inProgress" : "completed");
    const notes = limitNotes(ctx.notes, NOTES_MAX, ctx.log, "Google Play");
    const release: Release = {
      versionCodes: versionCodes.map(String),
      status,
      ...(p.user_fraction !== undefined ? { userFraction: p.user_fraction } : {}),
      ...(Object.keys(notes).length ? { releaseNotes: Object.entries(notes).map(([language, text]) => ({ language, text })) } : {}),
    };
    const current = await storeRequest<{ releases?: Release[] }>(ctx, "google play", `${api}/edits/${editId}/tracks/${encodeURIComponent(p.track)}`, {
      headers: auth,
    }).catch((error) => {
      // A custom track that has never had a release answers 404; it is created by the update.
      if (error instanceof StoreRefusal && error.status === 404) return { releases: [] as Release[] };
      throw error;
    });
    const codes = release.versionCodes!.slice().sort().join(",");
    const same = (current.releases ?? []).find(
      (r) => (r.versionCodes ?? []).slice().sort().join(",") === codes && r.status === status && (r.userFraction ?? null) === (release.userFraction ?? null),
    );
    const what = `version code${versionCodes.length > 1 ? "s" : ""} ${versionCodes.join(", ")} on track ${p.track} (${status}${p.user_fraction !== undefined ? `, ${Math.round(p.user_fraction * 1000) / 10} % of users` : ""})`;
    if (same) {
      ctx.log(`[google play] track ${p.track} already has this release; the edit is discarded, nothing is committed twice`);
      await discard(ctx, api, editId, auth);
      return {
        summary: `Google Play already had ${what}`,
        version: versionCodes.join(","),
        url: null,
        details: { package_name: p.package_name, track: p.track, status },
      };
    }
    // The new release alone, as Play's staged rollout guide sends it: the completed release before
    // it keeps serving the users outside userFraction
    // (https://developers.google.com/android-publisher/tracks#staged_rollouts).
    await storeRequest(ctx, "google play", `${api}/edits/${editId}/tracks/${encodeURIComponent(p.track)}`, {
      method: "PUT",
      headers: json,
      body: JSON.stringify({ track: p.track, releases: [release] }),
    });
    ctx.log(
      `[google play] track ${p.track}: ${what}${release.releaseNotes ? `, release notes in ${release.releaseNotes.map((n) => n.language).join(", ")}` : ""}`,
    );
    // 6. Commit.
    await storeRequest(ctx, "google play", `${api}/edits/${editId}:commit`, { method: "POST", headers: auth });
    ctx.log(`[google play] edit ${editId} committed`);
    return {
      summary: `Google Play has ${what}`,
      version: versionCodes.join(","),
      url: null,
      details: { package_name: p.package_name, track: p.track, status, edit_id: editId },
    };
  } catch (error) {
    await discard(ctx, api, editId, auth);
    throw explain(error, p);
  }
}

async function discard(ctx: PublishContext, api: string, editId: string, auth: Record<string, string>): Promise<void> {
  try {
    await storeRequest(ctx, "google play", `${api}/edits/${editId}`, { method: "DELETE", headers: auth });
  } catch {
    // An edit that is not committed expires on its own.
  }
}

/** The store's usual refusals, in words, with its own message. */
function explain(error: unknown, p: GooglePlayConfig): unknown {
  if (!(error instanceof StoreRefusal) || error.status === 0) return error;
  const said = `Google Play said: ${error.status} ${error.storeMessage}`;
  const message = error.storeMessage.toLowerCase();
  if (/version code.*already been used|apkUpgradeVersionConflict/i.test(error.storeMessage) || error.reason === "apkUpgradeVersionConflict") {
    return new PublishFailure(
      `this version code was already used for another upload of ${p.package_name}; raise the build number (e.g. flutter build appbundle --build-number=$ROOST_BUILD_NUMBER). ${said}`,
    );
  }
  if (error.status === 404 || message.includes("package not found"))
    return new PublishFailure(
      `Google Play does not know the package ${p.package_name}: create the app in the Play Console and upload its first bundle there by hand (docs/publishing.md). ${said}`,
    );
  if (error.status === 401 || error.status === 403)
    return new PublishFailure(
      `the service account may not release ${p.package_name}: invite it in the Play Console (Users and permissions) with the release permissions (docs/publishing.md). ${said}`,
    );
  return new PublishFailure(said);
}

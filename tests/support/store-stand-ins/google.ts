// A STAND-IN for Google's OAuth 2.0 token endpoint, the Google Play Android Publisher API v3 and
// the Firebase App Distribution API, for tests only: these machines cannot reach Google. It
// serves the requests Roost's store clients make (runner/publish/) with the answers Google
// documents, checks the credentials they must send, and records every upload's bytes.
//
// Pages it follows:
// - OAuth 2.0 for server-to-server applications, the JWT bearer grant (RFC 7523):
//   https://developers.google.com/identity/protocols/oauth2/service-account#httprest
//   The JWT's RS256 signature is verified with the service account's public key, its iss, aud
//   (the token_uri) and scope checked; a bad one answers 400 {"error": "invalid_grant"}.
// - The edits workflow: https://developers.google.com/android-publisher/edits
//   edits.insert / delete / commit: https://developers.google.com/android-publisher/api-ref/rest/v3/edits
//   edits.bundles.list / upload: https://developers.google.com/android-publisher/api-ref/rest/v3/edits.bundles
//   edits.apks.list / upload: https://developers.google.com/android-publisher/api-ref/rest/v3/edits.apks
//   edits.tracks.get / update and the Release object: https://developers.google.com/android-publisher/api-ref/rest/v3/edits.tracks
//   Errors are Google's JSON error (https://cloud.google.com/apis/design/errors#http_mapping):
//   {"error": {"code", "message", "status", "errors": [{"reason", "message"}]}}.
// - Firebase App Distribution REST: https://firebase.google.com/docs/reference/app-distribution/rest
//   releases:upload (long-running operation), operations.get, releases.patch, releases.distribute:
//   https://firebase.google.com/docs/app-distribution/android/distribute-rest-api
//
// What a real store reads from the binary, the stand-in cannot: Play takes an upload's version code
// from the bundle's manifest, and this stand-in from a `versionCode=<n>` text the tests' fake
// bundles carry (Firebase's display and build versions likewise from `versionName=`/`versionCode=`).
import { createHash } from "node:crypto";
import { importSPKI, jwtVerify } from "jose";
import { borrowRsaKey, returnRsaKeys, type TestRsaKey } from "../test-keys.ts";
import { serveStandIn } from "./serve.ts";

export interface ServiceAccount {
  client_email: string;
  /** The JSON key as Google's console downloads it; what a test stores as the environment secret. */
  json: string;
}

export interface PlayUpload {
  package_name: string;
  kind: "bundles" | "apks";
  version_code: number;
  sha256: string;
  size: number;
  by: string;
}

interface Release {
  name?: string;
  versionCodes?: string[];
  status?: string;
  userFraction?: number;
  releaseNotes?: { language: string; text: string }[];
}

interface PlayApp {
  /** Service accounts invited with release permissions. */
  allowed: Set<string>;
  bundles: { versionCode: number; sha1: string; sha256: string }[];
  apks: { versionCode: number; binary: { sha1: string; sha256: string } }[];
  tracks: Map<string, Release[]>;
}

interface Edit {
  id: string;
  pkg: string;
  by: string;
  bundles: PlayApp["bundles"];
  apks: PlayApp["apks"];
  tracks: Map<string, Release[]>;
}

export interface FirebaseRelease {
  name: string;
  displayVersion: string;
  buildVersion: string;
  sha256: string;
  releaseNotes: { text: string } | null;
  testers: string[];
  groups: string[];
  firebaseConsoleUri: string;
}

interface FirebaseApp {
  allowed: Set<string>;
  groups: Set<string>;
  releases: FirebaseRelease[];
}

export interface GoogleStandIn {
  url: string;
  tokenUri: string;
  /** A new service account: its JSON key (token_uri pointing here) and its public key registered. */
  serviceAccount(name?: string): Promise<ServiceAccount>;
  play: {
    addApp(packageName: string, allowed: string[]): void;
    uploads: PlayUpload[];
    /** The committed tracks of an app. */
    track(packageName: string, track: string): Release[];
    commits: number;
  };
  firebase: {
    addApp(appId: string, allowed: string[], groups?: string[]): void;
    releases(appId: string): FirebaseRelease[];
    uploads: { app_id: string; sha256: string; by: string }[];
  };
  /** Every request: method, path, and the service account it was made as (null without a valid token). */
  requests: { method: string; path: string; as: string | null }[];
  stop(): Promise<void>;
}

const STANDARD_TRACKS = ["internal", "alpha", "beta", "production"];

function googleError(code: number, status: string, message: string, reason = ""): Response {
  return Response.json({ error: { code, message, status, errors: [{ message, domain: "global", reason: reason || status.toLowerCase() }] } }, { status: code });
}

function sha(algorithm: "sha1" | "sha256", bytes: Uint8Array): string {
  return createHash(algorithm).update(bytes).digest("hex");
}

function marker(bytes: Uint8Array, name: string): string | null {
  return new TextDecoder().decode(bytes).match(new RegExp(`${name}=([A-Za-z0-9._-]+)`))?.[1] ?? null;
}

export async function startGoogleStandIn(): Promise<GoogleStandIn> {
  const publicKeys = new Map<string, CryptoKey>();
  const tokens = new Map<string, { email: string; scope: string }>();
  const apps = new Map<string, PlayApp>();
  const edits = new Map<string, Edit>();
  const firebaseApps = new Map<string, FirebaseApp>();
  const operations = new Map<string, { polls: number; result: string; release: FirebaseRelease }>();
  const requests: GoogleStandIn["requests"] = [];
  const uploads: PlayUpload[] = [];
  const firebaseUploads: GoogleStandIn["firebase"]["uploads"] = [];
  let commits = 0;
  let next = 1;
  const accountKeys: TestRsaKey[] = [];

  const server = serveStandIn(async (req, url) => {
    const path = url.pathname;
    const bearer = req.headers.get("authorization")?.match(/^Bearer (.+)$/)?.[1];
    const caller = bearer ? (tokens.get(bearer) ?? null) : null;
    requests.push({ method: req.method, path, as: caller?.email ?? null });

    // The token endpoint (RFC 7523 §2.1, Google's server-to-server guide).
    if (path === "/token" && req.method === "POST") {
      const form = new URLSearchParams(await req.text());
      if (form.get("grant_type") !== "urn:ietf:params:oauth:grant-type:jwt-bearer")
        return Response.json({ error: "unsupported_grant_type", error_description: "Invalid grant_type." }, { status: 400 });
      const assertion = form.get("assertion") ?? "";
      const claims = JSON.parse(Buffer.from(assertion.split(".")[1] ?? "", "base64url").toString() || "{}") as { iss?: string; scope?: string };
      const key = claims.iss ? publicKeys.get(claims.iss) : undefined;
      if (!key) return Response.json({ error: "invalid_grant", error_description: "Invalid grant: account not found" }, { status: 400 });
      try {
        await jwtVerify(assertion, key, { algorithms: ["RS256"], issuer: claims.iss!, audience: `${server.url.origin}/token`, maxTokenAge: "1h" });
      } catch (error) {
        return Response.json({ error: "invalid_grant", error_description: `Invalid JWT Signature. (${(error as Error).message})` }, { status: 400 });
      }
      if (!claims.scope) return Response.json({ error: "invalid_scope", error_description: "Empty or missing scope not allowed." }, { status: 400 });
      const token = `ya29.stand-in-${crypto.randomUUID()}`;
      tokens.set(token, { email: claims.iss!, scope: claims.scope });
      return Response.json({ access_token: token, expires_in: 3599, token_type: "Bearer" });
    }

    // Android Publisher API v3.
    const play = path.match(
      /^\/(upload\/)?androidpublisher\/v3\/applications\/([^/]+)\/edits(?:\/([^/:]+))?(?::(commit))?(?:\/(bundles|apks|tracks))?(?:\/([^/]+))?$/,
    );
    if (play) {
      if (!caller || !caller.scope.includes("auth/androidpublisher"))
        return googleError(401, "UNAUTHENTICATED", "Request is missing required authentication credential.");
      const [, isUpload, pkg, editId, commit, collection, item] = play;
      const app = apps.get(decodeURIComponent(pkg!));
      if (!app) return googleError(404, "NOT_FOUND", `Package not found: ${decodeURIComponent(pkg!)}.`, "notFound");
      if (!app.allowed.has(caller.email)) return googleError(403, "PERMISSION_DENIED", "The caller does not have permission", "permissionDenied");
      if (!editId) {
        if (req.method !== "POST") return googleError(405, "METHOD_NOT_ALLOWED", "Method not allowed");
        const id = String(10_000_000 + next++);
        edits.set(id, {
          id,
          pkg: pkg!,
          by: caller.email,
          bundles: structuredClone(app.bundles),
          apks: structuredClone(app.apks),
          tracks: new Map([...app.tracks].map(([k, v]) => [k, structuredClone(v)])),
        });
        return Response.json({ id, expiryTimeSeconds: String(Math.floor(Date.now() / 1000) + 3600) });
      }
      const edit = edits.get(editId);
      if (!edit || edit.pkg !== pkg) return googleError(404, "NOT_FOUND", `Edit ${editId} not found.`, "notFound");
      if (commit) {
        app.bundles = edit.bundles;
        app.apks = edit.apks;
        app.tracks = edit.tracks;
        edits.delete(editId);
        commits++;
        return Response.json({ id: editId });
      }
      if (!collection && req.method === "DELETE") {
        edits.delete(editId);
        return new Response(null, { status: 204 });
      }
      if ((collection === "bundles" || collection === "apks") && !item) {
        if (req.method === "GET")
          return Response.json(
            collection === "bundles"
              ? { kind: "androidpublisher#bundlesListResponse", bundles: edit.bundles }
              : { kind: "androidpublisher#apksListResponse", apks: edit.apks },
          );
        if (req.method === "POST" && isUpload && url.searchParams.get("uploadType") === "media") {
          const bytes = new Uint8Array(await req.arrayBuffer());
          const code = Number(marker(bytes, "versionCode"));
          if (!Number.isInteger(code) || code <= 0)
            return googleError(400, "INVALID_ARGUMENT", "The file is not a valid Android App Bundle or APK.", "badRequest");
          const used = [...edit.bundles.map((b) => b.versionCode), ...edit.apks.map((a) => a.versionCode)];
          if (used.includes(code)) {
            return collection === "bundles"
              ? googleError(403, "PERMISSION_DENIED", `Version code ${code} has already been used.`, "forbidden")
              : googleError(403, "PERMISSION_DENIED", "APK specifies a version code that has already been used.", "apkUpgradeVersionConflict");
          }
          uploads.push({ package_name: edit.pkg, kind: collection, version_code: code, sha256: sha("sha256", bytes), size: bytes.length, by: caller.email });
          if (collection === "bundles") {
            const bundle = { versionCode: code, sha1: sha("sha1", bytes), sha256: sha("sha256", bytes) };
            edit.bundles.push(bundle);
            return Response.json(bundle);
          }
          const apk = { versionCode: code, binary: { sha1: sha("sha1", bytes), sha256: sha("sha256", bytes) } };
          edit.apks.push(apk);
          return Response.json(apk);
        }
      }
      if (collection === "tracks" && item) {
        const track = decodeURIComponent(item);
        if (req.method === "GET") {
          const releases = edit.tracks.get(track) ?? (STANDARD_TRACKS.includes(track) ? [] : null);
          if (releases === null) return googleError(404, "NOT_FOUND", `Track not found: ${track}.`, "notFound");
          return Response.json({ track, releases });
        }
        if (req.method === "PUT") {
          const body = (await req.json()) as { track?: string; releases?: Release[] };
          const known = new Set([...edit.bundles.map((b) => String(b.versionCode)), ...edit.apks.map((a) => String(a.versionCode))]);
          for (const r of body.releases ?? []) {
            if (!["completed", "draft", "halted", "inProgress"].includes(r.status ?? ""))
              return googleError(400, "INVALID_ARGUMENT", `Invalid release status: ${r.status}.`, "badRequest");
            const missing = (r.versionCodes ?? []).filter((c) => !known.has(c));
            if (missing.length) return googleError(400, "INVALID_ARGUMENT", `Version codes not found: ${missing.join(", ")}.`, "badRequest");
            if (r.userFraction !== undefined && r.status !== "inProgress" && r.status !== "halted")
              return googleError(400, "INVALID_ARGUMENT", "A user fraction can only be set on an inProgress or halted release.", "badRequest");
            if (r.status === "inProgress" && !(r.userFraction! > 0 && r.userFraction! < 1))
              return googleError(400, "INVALID_ARGUMENT", "An inProgress release needs a user fraction between 0 and 1.", "badRequest");
          }
          edit.tracks.set(track, body.releases ?? []);
          return Response.json({ track, releases: body.releases ?? [] });
        }
      }
      return googleError(404, "NOT_FOUND", `No stand-in answer for ${req.method} ${path}.`);
    }

    // Firebase App Distribution.
    const fb = path.match(/^\/(upload\/)?v1\/projects\/(\d+)\/apps\/([^/]+)\/releases(?::upload|\/(-|[^/:]+)(?:\/operations\/([^/]+))?(:distribute)?)?$/);
    if (fb) {
      if (!caller || !caller.scope.includes("auth/cloud-platform"))
        return googleError(401, "UNAUTHENTICATED", "Request is missing required authentication credential.");
      const [, isUpload, , appId, releaseId, operationId, distribute] = fb;
      const app = firebaseApps.get(decodeURIComponent(appId!));
      if (!app) return googleError(404, "NOT_FOUND", `App not found: ${decodeURIComponent(appId!)}`);
      if (!app.allowed.has(caller.email)) return googleError(403, "PERMISSION_DENIED", "The caller does not have permission");
      if (isUpload && req.method === "POST") {
        if (req.headers.get("x-goog-upload-protocol") !== "raw") return googleError(400, "INVALID_ARGUMENT", "X-Goog-Upload-Protocol must be raw.");
        const bytes = new Uint8Array(await req.arrayBuffer());
        const digest = sha("sha256", bytes);
        firebaseUploads.push({ app_id: appId!, sha256: digest, by: caller.email });
        let release = app.releases.find((r) => r.sha256 === digest);
        const result = release ? "RELEASE_UNMODIFIED" : "RELEASE_CREATED";
        if (!release) {
          const id = `rel-${next++}`;
          release = {
            name: `${path.replace(/^\/upload\/v1\//, "").replace(/:upload$/, "")}/${id}`,
            displayVersion: marker(bytes, "versionName") ?? "1.0.0",
            buildVersion: marker(bytes, "versionCode") ?? "1",
            sha256: digest,
            releaseNotes: null,
            testers: [],
            groups: [],
            firebaseConsoleUri: `https://console.firebase.google.com/project/stand-in/appdistribution/app/${appId}/releases/${id}`,
          };
          app.releases.push(release);
        }
        const op = `op-${next++}`;
        operations.set(op, { polls: 0, result, release });
        return Response.json({ name: `projects/${fb[2]}/apps/${appId}/releases/-/operations/${op}` });
      }
      if (operationId && req.method === "GET") {
        const op = operations.get(operationId);
        if (!op) return googleError(404, "NOT_FOUND", "Operation not found.");
        // Done at the second poll: a client must poll (the upload answers before processing).
        if (op.polls++ === 0) return Response.json({ name: path.slice(4), done: false });
        const { sha256: _sha, testers: _t, groups: _g, ...release } = op.release;
        return Response.json({
          name: path.slice(4),
          done: true,
          response: { "@type": "type.googleapis.com/google.firebase.appdistro.v1.UploadReleaseResponse", result: op.result, release },
        });
      }
      const release = app.releases.find((r) => r.name.endsWith(`/releases/${releaseId}`));
      if (!release) return googleError(404, "NOT_FOUND", "Release not found.");
      if (req.method === "PATCH" && !distribute) {
        if (url.searchParams.get("updateMask") !== "release_notes.text") return googleError(400, "INVALID_ARGUMENT", "Unsupported update mask.");
        release.releaseNotes = ((await req.json()) as { releaseNotes?: { text: string } }).releaseNotes ?? null;
        const { sha256: _sha, testers: _t, groups: _g, ...out } = release;
        return Response.json(out);
      }
      if (req.method === "POST" && distribute) {
        const body = (await req.json()) as { testerEmails?: string[]; groupAliases?: string[] };
        const unknown = (body.groupAliases ?? []).filter((g) => !app.groups.has(g));
        if (unknown.length) return googleError(400, "FAILED_PRECONDITION", `Group not found: ${unknown.join(", ")}.`);
        release.testers = [...new Set([...release.testers, ...(body.testerEmails ?? [])])];
        release.groups = [...new Set([...release.groups, ...(body.groupAliases ?? [])])];
        return Response.json({});
      }
    }
    return googleError(404, "NOT_FOUND", `No stand-in answer for ${req.method} ${path}.`);
  });

  return {
    url: server.url.origin,
    tokenUri: `${server.url.origin}/token`,
    async serviceAccount(name = `ci-${next++}`) {
      const key = borrowRsaKey(); // from the process's pool (test-keys.ts); each account its own
      accountKeys.push(key);
      const { publicKey, privateKey } = key;
      const client_email = `${name}@stand-in-project.iam.gserviceaccount.com`;
      publicKeys.set(client_email, await importSPKI(publicKey.export({ type: "spki", format: "pem" }).toString(), "RS256"));
      const json = JSON.stringify({
        type: "service_account",
        project_id: "stand-in-project",
        private_key_id: crypto.randomUUID().replace(/-/g, ""),
        private_key: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
        client_email,
        client_id: "1234567890",
        token_uri: `${server.url.origin}/token`,
      });
      return { client_email, json };
    },
    play: {
      addApp(packageName, allowed) {
        apps.set(packageName, { allowed: new Set(allowed), bundles: [], apks: [], tracks: new Map() });
      },
      uploads,
      track: (packageName, track) => apps.get(packageName)?.tracks.get(track) ?? [],
      get commits() {
        return commits;
      },
    },
    firebase: {
      addApp(appId, allowed, groups = []) {
        firebaseApps.set(appId, { allowed: new Set(allowed), groups: new Set(groups), releases: [] });
      },
      releases: (appId) => firebaseApps.get(appId)?.releases ?? [],
      uploads: firebaseUploads,
    },
    requests,
    async stop() {
      await server.stop(true);
      returnRsaKeys(...accountKeys);
    },
  };
}

// A STAND-IN for the App Store Connect API and, with altool.ts beside it, for Apple's upload
// service, for tests only: these machines cannot reach Apple. It answers the requests Roost's
// client makes (runner/publish/app-store-connect.ts) as Apple documents them and checks the API
// key's token the way Apple does.
//
// Pages it follows:
// - Generating Tokens for API Requests (ES256, kid, iss, aud "appstoreconnect-v1", at most 20 minutes):
//   https://developer.apple.com/documentation/appstoreconnectapi/generating-tokens-for-api-requests
//   A token that does not verify answers 401 NOT_AUTHORIZED, as Apple's error format has it:
//   https://developer.apple.com/documentation/appstoreconnectapi/interpreting-and-handling-errors
// - List Builds (GET /v1/builds, filter[app], filter[version], filter[preReleaseVersion.version];
//   processingState PROCESSING | FAILED | INVALID | VALID):
//   https://developer.apple.com/documentation/appstoreconnectapi/get-v1-builds
// - Beta build localizations (GET /v1/builds/{id}/betaBuildLocalizations, POST and PATCH
//   /v1/betaBuildLocalizations): https://developer.apple.com/documentation/appstoreconnectapi/beta-build-localizations
// - Beta groups (GET /v1/betaGroups?filter[app]&filter[name]; POST
//   /v1/builds/{id}/relationships/betaGroups): https://developer.apple.com/documentation/appstoreconnectapi/add-access-for-beta-groups-to-a-build
// - Beta App Review (GET /v1/builds/{id}/betaAppReviewSubmission; POST /v1/betaAppReviewSubmissions):
//   https://developer.apple.com/documentation/appstoreconnectapi/beta-app-review-submissions
//
// Uploads do not go through this API (altool does them): the altool stand-in reports each to
// POST /stand-in/uploads, with a token signed by the key it found, and the build then appears
// here as PROCESSING, and VALID at its second listing.
import { generateKeyPairSync } from "node:crypto";
import { decodeProtectedHeader, importSPKI, jwtVerify } from "jose";
import { serveStandIn } from "./serve.ts";

export interface AscKey {
  keyId: string;
  issuerId: string;
  /** The .p8 as App Store Connect downloads it: a PKCS#8 EC P-256 key. */
  p8: string;
}

export interface AscBuild {
  id: string;
  app: string;
  version: string;
  shortVersion: string;
  bundleId: string;
  processingState: string;
  listings: number;
  whatToTest: Map<string, { id: string; text: string }>;
  groups: Set<string>;
  submitted: boolean;
  /** Whether the IPA was uploaded (false: the test put it there). */
  uploaded: boolean;
}

export interface AppStoreConnectStandIn {
  url: string;
  key(): Promise<AscKey>;
  addApp(appId: string, bundleId: string, groups: string[]): void;
  builds: AscBuild[];
  uploads: { app: string; version: string; shortVersion: string; keyId: string }[];
  requests: { method: string; path: string }[];
  /** Whether an upload's build processes to VALID (default) or FAILED. */
  processing: "VALID" | "FAILED";
  stop(): Promise<void>;
}

function appleError(status: number, code: string, title: string, detail: string): Response {
  return Response.json({ errors: [{ id: crypto.randomUUID(), status: String(status), code, title, detail }] }, { status });
}

export async function startAppStoreConnectStandIn(): Promise<AppStoreConnectStandIn> {
  const keys = new Map<string, { issuer: string; key: CryptoKey }>();
  const apps = new Map<string, { bundleId: string; groups: { id: string; name: string }[] }>();
  const builds: AscBuild[] = [];
  const uploads: AppStoreConnectStandIn["uploads"] = [];
  const requests: AppStoreConnectStandIn["requests"] = [];
  const state = { processing: "VALID" as "VALID" | "FAILED" };
  let next = 1;

  /** Apple's token rules; null when the token is good. */
  async function refuse(authorization: string | null): Promise<Response | null> {
    const token = authorization?.match(/^Bearer (.+)$/)?.[1];
    const unauthorized = (why: string) =>
      appleError(
        401,
        "NOT_AUTHORIZED",
        "Authentication credentials are missing or invalid.",
        `Provide a properly configured and signed bearer token, and make sure that it has not expired. (${why})`,
      );
    if (!token) return unauthorized("no token");
    let kid: string | undefined;
    try {
      const header = decodeProtectedHeader(token);
      if (header.alg !== "ES256") return unauthorized("alg must be ES256");
      kid = header.kid;
    } catch {
      return unauthorized("not a JWT");
    }
    const known = kid ? keys.get(kid) : undefined;
    if (!known) return unauthorized("unknown kid");
    try {
      const { payload } = await jwtVerify(token, known.key, { algorithms: ["ES256"], issuer: known.issuer, audience: "appstoreconnect-v1" });
      if (typeof payload.exp !== "number" || typeof payload.iat !== "number" || payload.exp - payload.iat > 1200)
        return unauthorized("a token lives at most 20 minutes");
    } catch (error) {
      return unauthorized((error as Error).message);
    }
    return null;
  }

  const toResource = (b: AscBuild) => ({
    type: "builds",
    id: b.id,
    attributes: { version: b.version, processingState: b.processingState, uploadedDate: new Date().toISOString() },
  });

  const server = serveStandIn(async (req, url) => {
    const path = url.pathname;
    requests.push({ method: req.method, path });
    const refusal = await refuse(req.headers.get("authorization"));
    if (refusal) return refusal;
    const body = req.method === "POST" || req.method === "PATCH" ? ((await req.json().catch(() => null)) as any) : null;

    if (path === "/stand-in/uploads" && req.method === "POST") {
      const app = [...apps.entries()].find(([, a]) => a.bundleId === body.bundleId);
      if (!app)
        return Response.json(
          {
            "product-errors": [
              { code: -19201, message: `No suitable application records were found. Verify your bundle identifier '${body.bundleId}' is correct.` },
            ],
          },
          { status: 409 },
        );
      if (builds.some((b) => b.app === app[0] && b.version === body.version && b.shortVersion === body.shortVersion)) {
        return Response.json(
          {
            "product-errors": [
              { code: -19232, message: `The bundle version must be higher than the previously uploaded version: '${body.version}'. (ID: stand-in)` },
            ],
          },
          { status: 409 },
        );
      }
      uploads.push({ app: app[0], version: body.version, shortVersion: body.shortVersion, keyId: body.keyId });
      builds.push({
        id: `build-${next++}`,
        app: app[0],
        version: body.version,
        shortVersion: body.shortVersion,
        bundleId: body.bundleId,
        processingState: "PROCESSING",
        listings: 0,
        whatToTest: new Map(),
        groups: new Set(),
        submitted: false,
        uploaded: true,
      });
      return Response.json({ "success-message": `No errors uploading '${body.file}'`, details: { "delivery-uuid": crypto.randomUUID() } });
    }

    if (path === "/v1/builds" && req.method === "GET") {
      const app = url.searchParams.get("filter[app]");
      if (!app || !apps.has(app))
        return appleError(404, "NOT_FOUND", "The specified resource does not exist", `There is no resource of type 'apps' with id '${app}'`);
      const found = builds.filter(
        (b) =>
          b.app === app &&
          (!url.searchParams.get("filter[version]") || b.version === url.searchParams.get("filter[version]")) &&
          (!url.searchParams.get("filter[preReleaseVersion.version]") || b.shortVersion === url.searchParams.get("filter[preReleaseVersion.version]")),
      );
      for (const b of found) if (b.processingState === "PROCESSING" && ++b.listings >= 2) b.processingState = state.processing;
      return Response.json({ data: found.map(toResource) });
    }
    const buildPath = path.match(/^\/v1\/builds\/([^/]+)\/(betaBuildLocalizations|betaAppReviewSubmission|relationships\/betaGroups)$/);
    if (buildPath) {
      const build = builds.find((b) => b.id === buildPath[1]);
      if (!build)
        return appleError(404, "NOT_FOUND", "The specified resource does not exist", `There is no resource of type 'builds' with id '${buildPath[1]}'`);
      if (buildPath[2] === "betaBuildLocalizations" && req.method === "GET")
        return Response.json({
          data: [...build.whatToTest].map(([locale, l]) => ({ type: "betaBuildLocalizations", id: l.id, attributes: { locale, whatToTest: l.text } })),
        });
      if (buildPath[2] === "betaAppReviewSubmission" && req.method === "GET")
        return Response.json({ data: build.submitted ? { type: "betaAppReviewSubmissions", id: `review-${build.id}` } : null });
      if (buildPath[2] === "relationships/betaGroups" && req.method === "POST") {
        const groups = apps.get(build.app)!.groups;
        for (const g of body?.data ?? []) {
          if (!groups.some((x) => x.id === g.id))
            return appleError(404, "NOT_FOUND", "The specified resource does not exist", `There is no resource of type 'betaGroups' with id '${g.id}'`);
          build.groups.add(g.id);
        }
        return new Response(null, { status: 204 });
      }
    }
    if (path === "/v1/betaBuildLocalizations" && req.method === "POST") {
      const build = builds.find((b) => b.id === body?.data?.relationships?.build?.data?.id);
      const locale = body?.data?.attributes?.locale;
      if (!build) return appleError(404, "NOT_FOUND", "The specified resource does not exist", "no such build");
      if (build.whatToTest.has(locale))
        return appleError(
          409,
          "ENTITY_ERROR.ATTRIBUTE.INVALID.DUPLICATE",
          "The provided entity includes an attribute with a value that has already been used",
          `A localization for ${locale} exists already.`,
        );
      const id = `loc-${next++}`;
      build.whatToTest.set(locale, { id, text: body.data.attributes.whatToTest });
      return Response.json({ data: { type: "betaBuildLocalizations", id, attributes: body.data.attributes } }, { status: 201 });
    }
    const loc = path.match(/^\/v1\/betaBuildLocalizations\/([^/]+)$/);
    if (loc && req.method === "PATCH") {
      for (const b of builds)
        for (const [locale, l] of b.whatToTest)
          if (l.id === loc[1]) {
            l.text = body.data.attributes.whatToTest;
            return Response.json({ data: { type: "betaBuildLocalizations", id: l.id, attributes: { locale, whatToTest: l.text } } });
          }
      return appleError(404, "NOT_FOUND", "The specified resource does not exist", "no such localization");
    }
    if (path === "/v1/betaGroups" && req.method === "GET") {
      const app = apps.get(url.searchParams.get("filter[app]") ?? "");
      const names = (url.searchParams.get("filter[name]") ?? "").split(",");
      return Response.json({
        data: (app?.groups ?? []).filter((g) => names.includes(g.name)).map((g) => ({ type: "betaGroups", id: g.id, attributes: { name: g.name } })),
      });
    }
    if (path === "/v1/betaAppReviewSubmissions" && req.method === "POST") {
      const build = builds.find((b) => b.id === body?.data?.relationships?.build?.data?.id);
      if (!build) return appleError(404, "NOT_FOUND", "The specified resource does not exist", "no such build");
      if (build.submitted) return appleError(409, "ENTITY_ERROR", "The request entity is not valid", "This build was already submitted for review.");
      build.submitted = true;
      return Response.json(
        { data: { type: "betaAppReviewSubmissions", id: `review-${build.id}`, attributes: { betaReviewState: "WAITING_FOR_REVIEW" } } },
        { status: 201 },
      );
    }
    return appleError(404, "NOT_FOUND", "The specified resource does not exist", `No stand-in answer for ${req.method} ${path}.`);
  });

  return {
    url: server.url.origin,
    async key() {
      const { publicKey, privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
      const keyId = Array.from({ length: 10 }, () => "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"[Math.floor(Math.random() * 32)]).join("");
      const issuerId = crypto.randomUUID();
      keys.set(keyId, { issuer: issuerId, key: await importSPKI(publicKey.export({ type: "spki", format: "pem" }).toString(), "ES256") });
      return { keyId, issuerId, p8: privateKey.export({ type: "pkcs8", format: "pem" }).toString() };
    },
    addApp(appId, bundleId, groups) {
      apps.set(appId, { bundleId, groups: groups.map((name, i) => ({ id: `group-${appId}-${i}`, name })) });
    },
    builds,
    uploads,
    requests,
    get processing() {
      return state.processing;
    },
    set processing(v) {
      state.processing = v;
    },
    async stop() {
      await server.stop(true);
    },
  };
}

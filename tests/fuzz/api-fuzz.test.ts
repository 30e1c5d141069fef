// A bounded, seeded fuzz over every operation of the API document (GET /v1/openapi.json): owner,
// developer, bogus and missing credentials; real and mutated path parameters; declared, unknown
// and repeated query parameters; bodies sampled from each operation's schema and then broken
// (wrong types, null, arrays, huge and deeply nested values, lone surrogates, unknown fields, text
// that is not JSON, other content types); bad Host headers and odd peers.
//
// Most requests go to the app in-process (where the peer address can vary); 10 % go over a real
// socket to the daemon's listener (lib/http/listener.ts) with fetch, and 5 % as raw HTTP/1.1 broken at
// the protocol level first (a lower-case or unknown method, a request line or header
// that is not HTTP/1.1, bad framing, oversized headers, no or a bad Host), as an outside fuzzer
// sends them: the listener must answer those with JSON too, never close without an answer.
//
// It fails on any 5xx and on any error answer that is not JSON {code, message} with the status
// the catalogue gives that code, printing the seed and each failing request. Reproduce with
//   ROOST_FUZZ_SEED=<seed> ROOST_FUZZ_REQUESTS=<n> bun test tests/fuzz/api-fuzz.test.ts
import { afterAll, beforeAll, expect, test } from "bun:test";
import { connect } from "node:net";
import { bootstrapOwner, createTestApp, userWithRole, type TestApp } from "../helpers/app.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../support/host-api-stand-in.ts";
import { createGithubIntegration, createPipeline, createProject, seedStandIn } from "../helpers/ci.ts";
import { ERROR_STATUS } from "../../lib/http/errors.ts";
import { listen, type Listener } from "../../lib/http/listener.ts";
import { silentLogger } from "../../lib/daemon/log.ts";
import { FETCH_TIMEOUT_MS } from "../../lib/auth/oidc.ts";
import { FORGE_TIMEOUT_MS } from "../../lib/forges/http.ts";

const SEED = Number(process.env.ROOST_FUZZ_SEED ?? 20_095);
const REQUESTS = Number(process.env.ROOST_FUZZ_REQUESTS ?? 26_000);
/** A request slower than this counts as a failure (the daemon would be blocked for everyone). */
const SLOW_MS = 2000;

/**
 * The only 5xx the API answers to a request nobody got wrong: once the fuzz itself, as the owner,
 * has stored an identity provider at an address where none answers, OIDC start and the switch to
 * External Access report that upstream failure with 502 oidc_discovery_error, as they must
 * (docs/external-access.md, "Errors"). Everything else in the 5xx range fails the run.
 */
const UPSTREAM_FAILURES = new Set(["GET /v1/auth/oidc/start oidc_discovery_error", "PUT /v1/settings/runtime-mode oidc_discovery_error"]);
/**
 * Those two operations wait for the stored provider, without blocking anyone else, for up to the
 * discovery timeout (FETCH_TIMEOUT_MS, 5 s): a name like idp.example.test, on a host whose resolver
 * stays silent, is answered only when the timeout fires. They are slow only past that wait.
 */
const WAITS_FOR_PROVIDER = new Set(["GET /v1/auth/oidc/start", "PUT /v1/settings/runtime-mode"]);
/**
 * These two check an integration's credentials against its forge's API, and wait for it, without
 * blocking anyone else, for up to FORGE_TIMEOUT_MS (10 s): the fuzz's integrations name public
 * hosts (api.bitbucket.org by default) that this machine may not reach, and a resolver that stays
 * silent answers only when its own timeout fires (5 s, seen once on request #22801).
 */
const WAITS_FOR_FORGE = new Set(["POST /v1/integrations", "POST /v1/integrations/{integration_id}/sync"]);

// --- a seeded PRNG (mulberry32) -------------------------------------------------------------

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = mulberry32(SEED);
const chance = (p: number) => random() < p;
const int = (min: number, max: number) => min + Math.floor(random() * (max - min + 1));
const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;

// --- values -----------------------------------------------------------------------------------

const NASTY_STRINGS = [
  "",
  " ",
  "a".repeat(300),
  "x".repeat(70_000),
  "\ud800",
  "ok \udfff",
  "\ud83d\ude80",
  "\u0000",
  "line\nbreak",
  "../../etc/passwd",
  "%zz",
  "%2e%2e%2f",
  "<script>alert(1)</script>",
  "' OR 1=1 --",
  "not a url",
  "javascript:alert(1)",
  "http://169.254.169.254/latest/meta-data/",
  "http://[fe80::1]/",
  "https://127.0.0.1:99999/",
  "http://[::1",
  "roost_pat_00000000000000000000000000000000",
  "-1",
  "0",
  "99999999999999999999999",
  "1e309",
  "true",
  "null",
  "main",
  "refs/heads/../x",
  "ÄÖÜ façade 中文",
];
const NASTY_NUMBERS = [0, -1, 1, 2 ** 31, 2 ** 53 + 1, -(2 ** 63), 1e308, 0.5, -0];

function nastyScalar(): unknown {
  switch (int(0, 4)) {
    case 0:
      return pick(NASTY_STRINGS);
    case 1:
      return pick(NASTY_NUMBERS);
    case 2:
      return chance(0.5);
    case 3:
      return null;
    default:
      return chance(0.5) ? [] : {};
  }
}

/** Text of arrays or objects nested `depth` deep (built as text: JSON.stringify would recurse). */
function deepText(depth: number): string {
  return chance(0.5) ? "[".repeat(depth) + "]".repeat(depth) : '{"a":'.repeat(depth) + "1" + "}".repeat(depth);
}

type Schema = Record<string, any>;

/** A value that fits `schema`, roughly: enough to get past validation into the handler. */
function sample(schema: Schema | undefined, ids: string[], depth = 0): unknown {
  if (!schema || depth > 6) return null;
  if ("const" in schema) return schema.const;
  if (Array.isArray(schema.enum)) return pick(schema.enum);
  const variants = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(variants)) return sample(pick(variants), ids, depth + 1);
  if (schema.default !== undefined && chance(0.3)) return schema.default;
  const type = Array.isArray(schema.type) ? pick(schema.type) : schema.type;
  switch (type) {
    case "object": {
      const out: Record<string, unknown> = {};
      const required = new Set<string>(schema.required ?? []);
      for (const [key, child] of Object.entries((schema.properties ?? {}) as Record<string, Schema>)) {
        if (required.has(key) || chance(0.5)) out[key] = sample(child, ids, depth + 1);
      }
      return out;
    }
    case "array":
      return Array.from({ length: int(0, 3) }, () => sample(schema.items, ids, depth + 1));
    case "integer":
      return int(schema.minimum ?? 0, Math.min(schema.maximum ?? 100, 1000));
    case "number":
      return random() * 100;
    case "boolean":
      return chance(0.5);
    case "null":
      return null;
    case "string":
      if (schema.format === "uri") return pick(["https://idp.example.test", "http://127.0.0.1:9/x", "https://gitlab.example.test"]);
      if (schema.format === "email") return `fuzz-${int(0, 9999)}@example.test`;
      if (schema.pattern && /\\d/.test(schema.pattern)) return String(int(1, 99999));
      return chance(0.3) && ids.length > 0 ? pick(ids) : pick(["fuzz", "main", "owner", "release/*", "linux", "x"]);
    default:
      return nastyScalar();
  }
}

/** Breaks a sampled value somewhere: another type, null, a nasty string, an unknown field, … */
function mutate(value: unknown, depth = 0): unknown {
  if (depth > 4 || chance(0.25)) {
    return chance(0.8) ? nastyScalar() : chance(0.5) ? [value, value] : { value };
  }
  if (Array.isArray(value)) {
    if (value.length === 0 || chance(0.3)) return [...value, nastyScalar()];
    const copy = [...value];
    const i = int(0, copy.length - 1);
    copy[i] = mutate(copy[i], depth + 1);
    return copy;
  }
  if (value !== null && typeof value === "object") {
    const copy: Record<string, unknown> = { ...(value as Record<string, unknown>) };
    const keys = Object.keys(copy);
    const roll = random();
    if (keys.length === 0 || roll < 0.2) copy[pick(["unknown_field", "\ud800key", "__proto__", "constructor", ""])] = nastyScalar();
    else if (roll < 0.35) delete copy[pick(keys)];
    else {
      const key = pick(keys);
      copy[key] = mutate(copy[key], depth + 1);
    }
    return copy;
  }
  return nastyScalar();
}

// --- requests ---------------------------------------------------------------------------------

interface Operation {
  method: string;
  path: string;
  auth: string;
  pathParams: string[];
  query: Array<{ name: string; schema: Schema }>;
  body: Schema | undefined;
}

interface FuzzRequest {
  n: number;
  /** Set when the request went over the socket: how it was broken at the protocol level, or "". */
  broken?: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | undefined;
  peer: string | null;
}

function operationsOf(document: any): Operation[] {
  const out: Operation[] = [];
  for (const [path, methods] of Object.entries(document.paths as Record<string, Record<string, any>>)) {
    for (const [method, op] of Object.entries(methods)) {
      const params = (op.parameters ?? []) as Array<{ name: string; in: string; schema: Schema }>;
      out.push({
        method: method.toUpperCase(),
        path,
        auth: op["x-roost-auth"],
        pathParams: params.filter((p) => p.in === "path").map((p) => p.name),
        query: params.filter((p) => p.in === "query"),
        body: op.requestBody?.content?.["application/json"]?.schema,
      });
    }
  }
  return out;
}

interface World {
  ownerToken: string;
  developerToken: string;
  /** Real ids by path parameter name, so some requests reach the handlers' inner code. */
  ids: Record<string, string[]>;
  allIds: string[];
}

function pathParam(name: string, world: World): string {
  const real = world.ids[name] ?? [];
  if (real.length > 0 && chance(0.5)) return pick(real);
  const value = chance(0.3) ? pick(world.allIds) : String(pick(NASTY_STRINGS.filter((s) => s.length < 1000)));
  // Mostly encoded the way a client library would; sometimes raw (a bad %-escape, a slash).
  return chance(0.8) ? encodePathSegment(value) : value.replace(/[?#\s]/g, "");
}

/** encodeURIComponent, except that a lone surrogate (which it refuses) becomes the bytes ED A0 80, not UTF-8. */
function encodePathSegment(value: string): string {
  return value
    .split(/(\p{Cs})/u)
    .map((part) => (/^\p{Cs}$/u.test(part) ? "%ED%A0%80" : encodeURIComponent(part)))
    .join("");
}

function buildRequest(n: number, op: Operation, world: World): FuzzRequest {
  let path = op.path;
  for (const name of op.pathParams) path = path.replace(`{${name}}`, pathParam(name, world));
  if (chance(0.03)) path += pick(["/", "//", "/extra", "%00"]);

  const search = new URLSearchParams();
  for (const q of op.query) {
    if (!chance(0.6)) continue;
    const value = chance(0.6) ? sample(q.schema, world.allIds) : nastyScalar();
    search.append(q.name, typeof value === "string" ? value : (JSON.stringify(value) ?? ""));
    if (chance(0.1)) search.append(q.name, "again");
  }
  if (chance(0.1)) search.append(pick(["unknown", "token", "limit", "offset"]), String(pick(NASTY_STRINGS.filter((s) => s.length < 1000))));
  const query = search.toString();

  const headers: Record<string, string> = { host: "127.0.0.1:8080" };
  const who = random();
  if (who < 0.55) headers.authorization = `Bearer ${world.ownerToken}`;
  else if (who < 0.65) headers.authorization = `Bearer ${world.developerToken}`;
  else if (who < 0.8)
    headers.authorization = pick([
      "Bearer ",
      "Bearer roost_pat_nope",
      "Bearer roost_sess_nope",
      "Bearer roost_rt_nope",
      "Basic Zm9vOmJhcg==",
      "Bearer \u00ff",
      `Bearer ${"a".repeat(5000)}`,
    ]);
  if (chance(0.15)) headers.host = pick(["127.0.0.1:99999", "evil.example.test", "", "[::1", "localhost:8080", "a b", "127.0.0.1:0"]);
  if (chance(0.1)) headers.origin = pick(["https://evil.example.test", "null", "http://127.0.0.1:8080", "not an origin"]);
  if (chance(0.05)) headers["x-forwarded-for"] = "127.0.0.1";

  let body: string | undefined;
  if (op.method !== "GET" && (op.body !== undefined || chance(0.3))) {
    const contentType = chance(0.9)
      ? "application/json"
      : pick(["text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1", "application/merge-patch+json", "multipart/form-data"]);
    headers["content-type"] = contentType;
    const roll = random();
    const sampled = sample(op.body, world.allIds);
    if (roll < 0.3) body = JSON.stringify(sampled);
    else if (roll < 0.7) body = JSON.stringify(mutate(sampled));
    else if (roll < 0.78) body = JSON.stringify(nastyScalar());
    else if (roll < 0.84) body = deepText(pick([17, 65, 1000, 50_000]));
    else if (roll < 0.88) body = `{"settings":${deepText(pick([15, 17, 64, 2000]))}}`;
    else if (roll < 0.92) body = pick(["", "{", "nul", '{"a":1}{', '"\\ud800"', "[1,2", "\u00ff\u00fe"]);
    else if (roll < 0.96) body = JSON.stringify({ ...(sampled as object), padding: "p".repeat(int(1, 3) * 400_000) });
    else body = JSON.stringify(sampled).replace(/"([^"\\]*)"/, '"$1\\udc00"');
  }
  const peer = chance(0.9) ? "127.0.0.1" : pick([null, "10.0.0.7", "::1", "::ffff:127.0.0.1"]);
  return { n, method: op.method, url: `http://127.0.0.1:8080${path}${query ? `?${query}` : ""}`, headers, body, peer };
}

function describeRequest(r: FuzzRequest): string {
  const body = r.body === undefined ? "" : ` body(${r.body.length})=${JSON.stringify(r.body.length > 300 ? r.body.slice(0, 300) + "…" : r.body)}`;
  return `#${r.n}${r.broken === undefined ? "" : r.broken === "" ? " [over the socket]" : ` [over the socket, broken: ${r.broken}]`} ${r.method} ${r.url.length > 300 ? r.url.slice(0, 300) + "…" : r.url} peer=${r.peer} headers=${JSON.stringify(r.headers, (_k, v) => (typeof v === "string" && v.length > 100 ? v.slice(0, 100) + "…" : v))}${body}`;
}

/** What is wrong with an answer, or null when it is acceptable. */
async function judge(op: Operation, response: Response): Promise<string | null> {
  if (response.status < 400) {
    // A successful event stream (GET /v1/events, a build's log) never ends by itself: close it.
    await response.body?.cancel();
    return null;
  }
  const text = await response.text();
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    return `${response.status} with a body that is not JSON: ${JSON.stringify(text.slice(0, 200))}`;
  }
  const keys = body && typeof body === "object" ? Object.keys(body).sort().join(",") : "";
  if (typeof body?.code !== "string" || typeof body?.message !== "string" || (keys !== "code,message" && keys !== "code,details,message")) {
    return `${response.status} with a body that is not {code, message}: ${text.slice(0, 200)}`;
  }
  if (!(response.headers.get("content-type") ?? "").startsWith("application/json")) return `${response.status} ${body.code} without a JSON content type`;
  const catalogued = (ERROR_STATUS as Record<string, number>)[body.code];
  if (catalogued !== response.status) return `${response.status} ${body.code}: the catalogue gives ${catalogued ?? "no status"}`;
  if (response.status >= 500 && !UPSTREAM_FAILURES.has(`${op.method} ${op.path} ${body.code}`)) return `${response.status} ${body.code}: ${body.message}`;
  return null;
}

// --- over a socket, as raw HTTP/1.1 ----------------------------------------------------------

/** The request as an HTTP/1.1 message, closing its connection after the answer. */
function rawMessage(r: FuzzRequest): { head: string; body: Buffer } {
  const url = new URL(r.url);
  const body = Buffer.from(r.body ?? "", "utf8");
  let head = `${r.method} ${url.pathname}${url.search} HTTP/1.1\r\n`;
  for (const [name, value] of Object.entries(r.headers)) head += `${name}: ${value}\r\n`;
  if (r.body !== undefined) head += `content-length: ${body.byteLength}\r\n`;
  return { head: head + "connection: close\r\n\r\n", body };
}

/** Breaks the message the way no HTTP library would, but a fuzzer or a broken client does. */
const PROTOCOL_BREAKS: Array<[string, (m: { head: string; body: Buffer }) => { head: string; body: Buffer }]> = [
  ["lower-case method", (m) => ({ ...m, head: m.head.replace(/^[A-Z]+/, (x) => x.toLowerCase()) })],
  ["unknown method", (m) => ({ ...m, head: m.head.replace(/^[A-Z]+/, pick(["FROB", "PURGE", "M-SEARCH", "TRACE", "BREW", "LINK"])) })],
  ["method that is not a token", (m) => ({ ...m, head: m.head.replace(/^[A-Z]+/, pick(["GE(T", "PO ST", "\u0000GET", "G\u00e9T"])) })],
  ["HTTP/2.0", (m) => ({ ...m, head: m.head.replace(" HTTP/1.1\r\n", " HTTP/2.0\r\n") })],
  ["no version", (m) => ({ ...m, head: m.head.replace(" HTTP/1.1\r\n", "\r\n") })],
  ["space in the target", (m) => ({ ...m, head: m.head.replace(/^(\S+ \/\S*?)\//, "$1 x/") })],
  ["raw byte in the target", (m) => ({ ...m, head: m.head.replace(/^(\S+ \/)/, `$1${pick(["\u00e9", "\u0001", "\u007f", "<"])}`) })],
  [
    "absolute-form target",
    (m) => ({ ...m, head: m.head.replace(/^(\S+ )\//, `$1${pick(["http://evil.example.test/", "https://127.0.0.1:8080/", "ftp://x/", "//"])}`) }),
  ],
  ["asterisk-form target", (m) => ({ ...m, head: m.head.replace(/^(\S+) \S+/, "$1 *") })],
  ["LF line endings", (m) => ({ ...m, head: m.head.replace(/\r\n/g, "\n") })],
  ["header without a colon", (m) => ({ ...m, head: m.head.replace("\r\n", "\r\nX-Broken header\r\n") })],
  ["control byte in a header", (m) => ({ ...m, head: m.head.replace("\r\n", `\r\nX-Control: a${pick(["\u0001", "\u0000", "\u007f"])}b\r\n`) })],
  ["folded header", (m) => ({ ...m, head: m.head.replace("\r\n", "\r\nX-Folded: a\r\n  b\r\n") })],
  ["space before a colon", (m) => ({ ...m, head: m.head.replace("\r\n", "\r\nX-Space : a\r\n") })],
  ["oversized headers", (m) => ({ ...m, head: m.head.replace("\r\n", `\r\nX-Big: ${"a".repeat(int(17, 40) * 1024)}\r\n`) })],
  ["no Host", (m) => ({ ...m, head: m.head.replace(/\r\nhost: [^\r]*/i, "") })],
  ["HTTP/1.0 without Host", (m) => ({ ...m, head: m.head.replace(" HTTP/1.1\r\n", " HTTP/1.0\r\n").replace(/\r\nhost: [^\r]*/i, "") })],
  [
    "bad Host",
    (m) => ({ ...m, head: m.head.replace(/\r\nhost: [^\r]*/i, `\r\nhost: ${pick(["127.0.0.1:99999", "[::1", "a b", "x/y", "@evil", "127.0.0.1:-1", ""])}`) }),
  ],
  ["two Hosts", (m) => ({ ...m, head: m.head.replace("\r\n", "\r\nHost: evil.example.test\r\n") })],
  [
    "Content-Length not a number",
    (m) => ({ ...m, head: m.head.replace("\r\n", `\r\nContent-Length: ${pick(["abc", "-1", "1e3", "0x10", "99999999999999999999"])}\r\n`) }),
  ],
  [
    "two Content-Lengths",
    (m) => ({
      ...m,
      head: m.head
        .replace(/\r\ncontent-length: \d+/i, "")
        .replace("\r\n", `\r\nContent-Length: ${m.body.byteLength}\r\nContent-Length: ${m.body.byteLength + 1}\r\n`),
    }),
  ],
  [
    "Content-Length and chunked",
    (m) => ({
      ...m,
      head: m.head.replace(/\r\ncontent-length: \d+/i, "").replace("\r\n", `\r\nTransfer-Encoding: chunked\r\nContent-Length: ${m.body.byteLength}\r\n`),
    }),
  ],
  [
    "bad chunk",
    (m) => ({
      head: m.head.replace(/\r\ncontent-length: \d+/i, "").replace("\r\n", "\r\nTransfer-Encoding: chunked\r\n"),
      body: Buffer.from(pick(["zz\r\n\r\n", "3\r\nabcd\r\n0\r\n\r\n", "-1\r\n\r\n", '2;x="\u0001"\r\nab\r\n0\r\n\r\n'])),
    }),
  ],
  [
    "a transfer coding other than chunked last",
    (m) => ({
      ...m,
      head: m.head
        .replace(/\r\ncontent-length: \d+/i, "")
        .replace("\r\n", `\r\nTransfer-Encoding: ${pick(["gzip", "chunked, gzip", "identity", "chunk"])}\r\n`),
    }),
  ],
  [
    "garbage",
    () => ({
      head: pick([
        "GARBAGE\r\n\r\n",
        "\u0016\u0003\u0001\u0002\u0000\u0001\u0000\u0001\u00fc\u0003\u0003",
        "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        "GET\r\n\r\n",
        " / HTTP/1.1\r\n\r\n",
      ]),
      body: Buffer.alloc(0),
    }),
  ],
];

interface RawAnswer {
  status: number;
  headers: Headers;
  body: string;
}

/**
 * Writes the message and reads the first answer: for a success its head only (a stream would not
 * end), for an error the whole body. Null when the connection closes without an answer.
 */
function sendRaw(port: number, message: { head: string; body: Buffer }, waitMs = SLOW_MS): Promise<RawAnswer | null> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let settled = false;
    const done = (answer: RawAnswer | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const socket = connect(port, "127.0.0.1", () => {
      socket.write(Buffer.concat([Buffer.from(message.head, "latin1"), message.body]), () => {});
    });
    // The fuzz's requests are all answered quickly; one that is not counts as "no answer".
    const timer = setTimeout(() => done(parse(true)), waitMs);
    const parse = (closed: boolean): RawAnswer | null => {
      const text = Buffer.concat(chunks).toString("latin1");
      const end = text.indexOf("\r\n\r\n");
      if (end < 0) return null;
      const [statusLine, ...lines] = text.slice(0, end).split("\r\n");
      const status = Number(/^HTTP\/1\.[01] (\d{3}) /.exec(statusLine!)?.[1] ?? 0);
      const headers = new Headers();
      for (const line of lines) headers.append(line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 1).trim());
      let body = Buffer.from(text.slice(end + 4), "latin1");
      if (status < 400) return { status, headers, body: "" };
      const length = headers.get("content-length");
      if (length !== null && body.byteLength < Number(length) && !closed) return null;
      if (length !== null) body = body.subarray(0, Number(length));
      return { status, headers, body: body.toString("utf8") };
    };
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      const answer = parse(false);
      if (answer) done(answer);
    });
    socket.on("error", () => {});
    socket.on("close", () => done(parse(true)));
  });
}

// --- the run ----------------------------------------------------------------------------------

let t: TestApp;
let listener: Listener;
let host: HostApiStandIn;
let world: World;
let operations: Operation[];

beforeAll(async () => {
  t = await createTestApp();
  host = await startHostApiStandIn();
  seedStandIn(host);
  const session = await bootstrapOwner(t);
  const pat = await t.call("POST", "/v1/api-tokens", { token: session, body: { name: "fuzz owner", role: "owner" } });
  const developer = await userWithRole(t, session, "developer");
  const other = await t.call("POST", "/v1/api-tokens", { token: session, body: { name: "fuzz spare", role: "developer" } });
  const integration = await createGithubIntegration(t, session, host);
  const project = await createProject(t, session);
  const pipeline = await createPipeline(t, session, project.id);
  const build = await t.call("POST", `/v1/projects/${project.id}/builds`, { token: session, body: { pipeline_id: pipeline.id, branch: "main" } });
  const runner = await t.call("POST", "/v1/runners", { token: session, body: { name: "fuzz-runner", labels: [] } });
  const ids: Record<string, string[]> = {
    // The owner's own token id is left out, so the run cannot revoke the credential it uses.
    token_id: [other.body.id],
    user_id: [developer.id],
    integration_id: [integration.integration.id],
    project_id: [project.id],
    pipeline_id: [pipeline.id],
    build_id: build.status === 201 ? [build.body.build.id] : [],
    runner_id: runner.status === 201 ? [runner.body.runner.id] : [],
  };
  world = { ownerToken: pat.body.token, developerToken: developer.token, ids, allIds: Object.values(ids).flat() };
  const document = await t.call("GET", "/v1/openapi.json");
  operations = operationsOf(document.body);
  listener = await listen(
    {
      fetch: (request, peer, connection) => t.app.fetch(request, peer, connection),
      refuseMethod: (method, pathname) => t.app.refuseMethod(method, pathname),
      error: () => new Response("listener error handler reached", { status: 500 }),
    },
    { hostname: "127.0.0.1", port: 0, fallbackOrigin: null, requestTimeoutSeconds: 30, idleTimeoutSeconds: 30, log: silentLogger },
  );
});

afterAll(async () => {
  await listener?.stop(true);
  await host?.stop();
  t?.close();
});

test(`${REQUESTS} fuzzed requests over every operation (seed ${SEED}) answer no 5xx and only JSON {code, message} errors`, async () => {
  expect(operations.length).toBeGreaterThan(60);
  const failures: string[] = [];
  const seen = new Set<string>();
  let socketRequests = 0;
  let socketErrors = 0;
  for (let n = 0; n < REQUESTS; n++) {
    // Every operation at least once, in document order; then at random.
    const op = n < operations.length ? operations[n]! : pick(operations);
    seen.add(`${op.method} ${op.path}`);
    const request = buildRequest(n, op, world);
    const started = performance.now();
    const operation = `${op.method} ${op.path}`;
    const slowMs = WAITS_FOR_PROVIDER.has(operation) ? FETCH_TIMEOUT_MS + SLOW_MS : WAITS_FOR_FORGE.has(operation) ? FORGE_TIMEOUT_MS + SLOW_MS : SLOW_MS;
    let problem: string | null;
    const transport = random();
    try {
      if (transport < 0.85) {
        const response = await t.app.fetch(new Request(request.url, { method: request.method, headers: request.headers, body: request.body }), request.peer);
        problem = await judge(op, response);
      } else if (transport < 0.95) {
        // Well-formed, over a kept-alive connection: what the listener makes of a fetch Response.
        request.broken = "";
        const url = request.url.replace("http://127.0.0.1:8080", `http://127.0.0.1:${listener.port}`);
        const response = await fetch(url, {
          method: request.method,
          headers: request.headers,
          body: request.body,
          redirect: "manual",
          signal: AbortSignal.timeout(slowMs),
        });
        socketRequests++;
        problem = await judge(op, response);
        if (problem === null && response.status >= 400) socketErrors++;
      } else {
        const [name, breakIt] = pick(PROTOCOL_BREAKS);
        const message = breakIt(rawMessage(request));
        request.broken = `${name}: ${JSON.stringify(message.head.length > 200 ? message.head.slice(0, 200) + "…" : message.head)}`;
        const answer = await sendRaw(listener.port, message, slowMs);
        socketRequests++;
        problem =
          answer === null
            ? "no answer: the connection closed (or stayed silent) without a status line"
            : await judge(op, new Response(answer.body, { status: answer.status, headers: answer.headers }));
        if (problem === null && answer !== null && answer.status >= 400) socketErrors++;
      }
    } catch (error) {
      problem = `threw: ${String(error)}`;
    }
    const elapsed = performance.now() - started;
    if (problem === null && elapsed > slowMs) problem = `took ${Math.round(elapsed)} ms`;
    if (problem !== null) failures.push(`${problem}\n    ${describeRequest(request)}`);
  }
  expect(seen.size).toBe(operations.length);
  // A third of the run went over the socket, and many of those were refused: the JSON check saw them.
  expect(socketRequests).toBeGreaterThan(REQUESTS / 10);
  expect(socketErrors).toBeGreaterThan(REQUESTS / 30);
  if (failures.length > 0) {
    console.error(
      `api fuzz: ${failures.length} of ${REQUESTS} requests failed (ROOST_FUZZ_SEED=${SEED} ROOST_FUZZ_REQUESTS=${REQUESTS}):\n  ${failures.slice(0, 25).join("\n  ")}`,
    );
  }
  expect(failures.slice(0, 10)).toEqual([]);
  // About 15 s of CPU; 25 s on an idle two-core machine, up to a minute on a busy one.
}, 150_000);

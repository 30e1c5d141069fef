// A real S3-compatible server for the object storage tests (docs/operations.md "Object storage"):
// S3rver (@20minutes/s3rver, a devDependency from npm), run in this Bun process on a free loopback
// port, with one bucket and one key pair. It checks AWS Signature Version 4 as S3 does, so a
// request signed with another secret is refused with SignatureDoesNotMatch.
import { createHash, createHmac } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";

interface S3rverInstance {
  run(): Promise<{ port: number }>;
  close(): Promise<void>;
}
interface AwsAccount {
  createKeyPair(accessKeyId: string, secretAccessKey: string): void;
  revokeAccessKey(accessKeyId: string): void;
}

const require = createRequire(import.meta.url);

// S3rver names DES by OpenSSL's alias "des", which Bun's crypto (BoringSSL) knows only as
// "des-cbc"; it encrypts the continuation token of every listing that stops short with it.
const nodeCrypto = require("node:crypto") as { createCipheriv: (...a: unknown[]) => unknown; createDecipheriv: (...a: unknown[]) => unknown };
for (const name of ["createCipheriv", "createDecipheriv"] as const) {
  const original = nodeCrypto[name];
  nodeCrypto[name] = (algorithm: unknown, ...rest: unknown[]) => original(algorithm === "des" ? "des-cbc" : algorithm, ...rest);
}

const S3rver = require("@20minutes/s3rver") as new (
  options: object,
) => S3rverInstance & {
  middleware: Array<(ctx: KoaContext, next: () => Promise<unknown>) => unknown>;
};

interface KoaContext {
  method: string;
  path: string;
  originalUrl: string;
  app: object;
  get(header: string): string;
}

/** RFC 3986 encoding, as AWS Signature Version 4 encodes each query parameter. */
const encodeRfc3986 = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/**
 * Whether a request is signed with `secret` for its path as sent (AWS Signature Version 4,
 * https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html). S3rver signs a
 * bucket's own URL without its trailing slash ("/bucket"), while the canonical URI is the path
 * as sent: Bun lists a bucket with GET /bucket/?list-type=2, which S3 accepts and S3rver refused.
 */
function signedForPathAsSent(ctx: KoaContext, secret: string): boolean {
  const auth = /^AWS4-HMAC-SHA256 Credential=[^/]+\/(\d{8})\/([^/]+)\/s3\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(
    ctx.get("authorization"),
  );
  if (!auth) return false;
  const [, day, region, signedHeaders, signature] = auth as unknown as [string, string, string, string, string];
  const [path, query = ""] = ctx.originalUrl.split("?") as [string, string?];
  const canonicalQuery = query
    .split("&")
    .filter(Boolean)
    .map((pair) =>
      pair
        .split("=")
        .map((part) => encodeRfc3986(decodeURIComponent(part ?? "")))
        .join("="),
    )
    .sort()
    .join("&");
  const headers = signedHeaders
    .split(";")
    .map((h) => `${h}:${ctx.get(h).trim()}\n`)
    .join("");
  const canonical = [ctx.method, path, canonicalQuery, headers, signedHeaders, ctx.get("x-amz-content-sha256")].join("\n");
  const toSign = ["AWS4-HMAC-SHA256", ctx.get("x-amz-date"), `${day}/${region}/s3/aws4_request`, createHash("sha256").update(canonical).digest("hex")].join(
    "\n",
  );
  let key: Buffer = createHmac("sha256", `AWS4${secret}`).update(day).digest();
  for (const part of [region, "s3", "aws4_request"]) key = createHmac("sha256", key).update(part).digest();
  return createHmac("sha256", key).update(toSign).digest("hex") === signature;
}
const { DUMMY_ACCOUNT } = require("@20minutes/s3rver/lib/models/account.js") as { DUMMY_ACCOUNT: AwsAccount };

export interface S3Server {
  endpoint: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** The ROOST_OBJECT_STORE* variables of a daemon using this bucket (`secret` replaces the right one). */
  env(o?: { secret?: string; presignSeconds?: number; prefix?: string }): Record<string, string>;
  /** A client with the right credentials, to look into the bucket as the operator would. */
  client: Bun.S3Client;
  /** Every key in the bucket, read from S3rver's directory (not through the API under test). */
  keys(): Promise<string[]>;
  stop(): Promise<void>;
}

/** `address`: where it listens (loopback unless given, e.g. this process's address on a test LAN, tests/support/netns.ts). */
export async function startS3Server(bucket = "roost-test", address = "127.0.0.1"): Promise<S3Server> {
  const directory = mkdtempSync(join(tmpdir(), "roost-s3rver-"));
  const accessKeyId = `roost-test-${crypto.randomUUID().slice(0, 8)}`;
  const secretAccessKey = crypto.randomUUID();
  DUMMY_ACCOUNT.createKeyPair(accessKeyId, secretAccessKey);
  const server = new S3rver({ address, port: 0, silent: true, directory, configureBuckets: [{ name: bucket }], vhostBuckets: false });
  // A listing signed correctly for its path as sent is let through S3rver's own check (above).
  server.middleware.unshift((ctx, next) => {
    if (ctx.method === "GET" && ctx.path === `/${bucket}/` && signedForPathAsSent(ctx, secretAccessKey)) {
      ctx.app = Object.create(ctx.app, { allowMismatchedSignatures: { value: true } });
    }
    return next();
  });
  const { port } = await server.run();
  const endpoint = `http://${address}:${port}`;
  const client = new Bun.S3Client({ endpoint, bucket, accessKeyId, secretAccessKey, region: "us-east-1" });
  return {
    endpoint,
    bucket,
    accessKeyId,
    secretAccessKey,
    client,
    env(o = {}) {
      return {
        ROOST_OBJECT_STORE: `s3://${bucket}${o.prefix ? `/${o.prefix}` : ""}?endpoint=${endpoint}&region=us-east-1`,
        ROOST_S3_ACCESS_KEY_ID: accessKeyId,
        ROOST_S3_SECRET_ACCESS_KEY: o.secret ?? secretAccessKey,
        ROOST_S3_PRESIGN_SECONDS: String(o.presignSeconds ?? 0),
      };
    },
    async keys() {
      const suffix = "._S3rver_object";
      const found = await Array.fromAsync(new Bun.Glob(`**/*${suffix}`).scan({ cwd: join(directory, bucket) }));
      return found.map((path) => path.slice(0, -suffix.length)).sort();
    },
    async stop() {
      await server.close();
      DUMMY_ACCOUNT.revokeAccessKey(accessKeyId);
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

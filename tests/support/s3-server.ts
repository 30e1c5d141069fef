// A real S3-compatible server for the object storage tests (docs/operations.md "Object storage"):
// S3rver (@20minutes/s3rver, a devDependency from npm), run in this Bun process on a free loopback
// port, with one bucket and one key pair. It checks AWS Signature Version 4 as S3 does, so a
// request signed with another secret is refused with SignatureDoesNotMatch.
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
const S3rver = require("@20minutes/s3rver") as new (options: object) => S3rverInstance;
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
  /** Every key in the bucket, read from S3rver's directory (its ListObjectsV2 refuses the signature Bun's client computes for it). */
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

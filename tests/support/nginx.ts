// A real nginx (the Debian package) started by a test, daemon off, its pid, logs and temp paths
// in a temp dir: as the load balancer of several hosts (startLoadBalancer, configured as
// docs/operations.md shows), or on loopback as the trusted proxy in front of a daemon
// (startNginx): HTTP Basic authentication from an htpasswd file, and `proxy_bind` so the daemon
// sees the chosen loopback address as the peer. docs/external-access.md shows the same settings;
// its access-log format (the http-context part of its nginx block) is used here as written.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";
import { fencedBlocks } from "../helpers/markdown.ts";

/**
 * The http-context lines of a doc's nginx block (everything before `server {`): the `map` and
 * `log_format roost` that keep a stream token's query string out of the access log.
 */
export function documentedLogFormat(doc: string): string {
  const markdown = readFileSync(resolve(import.meta.dir, "../..", doc), "utf8");
  const block = fencedBlocks(markdown).find((b) => b.info[0] === "nginx" && b.code.includes("log_format roost "));
  if (!block) throw new Error(`${doc} has no nginx block with log_format roost`);
  return block.code.slice(0, block.code.indexOf("server {")).trim();
}

export interface Nginx {
  url: string;
  /** What nginx wrote to its access log so far. */
  accessLog(): string;
  stop(): Promise<void>;
}

export interface NginxOptions {
  upstream: string;
  sharedSecret: string;
  /** The proxy's source address toward the daemon (the trusted peer); 127.0.0.2 by default. */
  bindAddress?: string;
  /** htpasswd lines; by default ada (password "wonderland") and mallory ("hunter2"). */
  users?: string[];
  /** The domain of the e-mail the proxy asserts for a user; example.test by default. */
  emailDomain?: string;
  /** The port to listen on (when the daemon must know its public URL first); a free one otherwise. */
  port?: number;
}

export async function freePort(): Promise<number> {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  return port;
}

export async function startNginx(options: NginxOptions): Promise<Nginx> {
  const o = { bindAddress: "127.0.0.2", users: ["ada:{PLAIN}wonderland", "mallory:{PLAIN}hunter2"], emailDomain: "example.test", ...options };
  const dir = mkdtempSync(join(tmpdir(), "roost-nginx-"));
  const port = o.port ?? (await freePort());
  writeFileSync(join(dir, "htpasswd"), o.users.join("\n") + "\n");
  const config = configIn(
    dir,
    64,
    `
  ${documentedLogFormat("docs/external-access.md").replace(/\n/g, "\n  ")}
  access_log ${dir}/access.log roost;
  server {
    listen 127.0.0.1:${port};
    # The live log stream authenticates with its ?token= (EventSource sends no Authorization).
    location ~ ^/v1/builds/[^/]+/logs/stream$ {
      proxy_pass ${o.upstream};
      proxy_bind ${o.bindAddress};
      proxy_set_header X-Roost-User-Email "";
      proxy_set_header X-Roost-Trusted-Proxy-Secret "";
      proxy_buffering off;
    }
    location / {
      auth_basic "Roost";
      auth_basic_user_file ${dir}/htpasswd;
      proxy_pass ${o.upstream};
      proxy_bind ${o.bindAddress};
      # Replace every client copy of the identity and secret headers; keep Basic credentials away.
      proxy_set_header X-Roost-User-Email "$remote_user@${o.emailDomain}";
      proxy_set_header X-Roost-Trusted-Proxy-Secret "${o.sharedSecret}";
      proxy_set_header Authorization "";
      proxy_set_header X-Forwarded-For $remote_addr;
    }
  }`,
  );
  return runNginx(dir, config, `http://127.0.0.1:${port}`);
}

/** The load balancer of docs/operations.md "Several hosts": its upstream's server parameters and its `location /` block, as written there. */
function documentedLoadBalancer(): { serverParameters: string; location: string } {
  const markdown = readFileSync(resolve(import.meta.dir, "../..", "docs/operations.md"), "utf8");
  const code = fencedBlocks(markdown).find((b) => b.info[0] === "nginx" && b.code.includes("upstream roost {"))?.code ?? "";
  const serverParameters = /^ {4}server \S+ (.+);$/m.exec(code)?.[1];
  const start = code.indexOf("    location / {");
  const end = code.indexOf("\n    }\n", start);
  if (!serverParameters || start < 0 || end < 0) throw new Error("docs/operations.md has no nginx block with upstream roost, its servers and a location /");
  return { serverParameters, location: code.slice(start, end + "\n    }".length) };
}

/**
 * nginx as the load balancer of several hosts, configured as docs/operations.md "Several hosts"
 * shows (documentedLoadBalancer), on a host of a test LAN (tests/support/netns.ts), port 8080,
 * without TLS: every request goes to the next of `upstreams` in turn, and one that cannot reach
 * a daemon goes to the next daemon while nothing of it was sent yet (nginx passes a POST on only
 * then, https://nginx.org/en/docs/http/ngx_http_upstream_module.html#proxy_next_upstream). The
 * access log names each request's upstreams and their statuses.
 */
export async function startLoadBalancer(on: { run: string[]; address: string }, upstreams: string[]): Promise<Nginx> {
  const dir = mkdtempSync(join(tmpdir(), "roost-nginx-lb-"));
  const { serverParameters, location } = documentedLoadBalancer();
  const config = configIn(
    dir,
    512,
    `
  log_format upstreams '$request_method $uri $status upstream=$upstream_addr upstream_status=$upstream_status';
  access_log ${dir}/access.log upstreams;
  upstream roost {
${upstreams.map((u) => `    server ${u} ${serverParameters};`).join("\n")}
  }
  server {
    listen 0.0.0.0:8080;
    client_max_body_size 64m;
${location}
  }`,
  );
  return runNginx(dir, config, `http://${on.address}:8080`, on.run);
}

/** A configuration of nginx in the foreground, one process, every file of it under `dir`; its http block holds `http`. */
function configIn(dir: string, workerConnections: number, http: string): string {
  return `
${process.getuid?.() === 0 ? "user root;" : ""}
daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections ${workerConnections}; }
http {
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
${http}
}
`;
}

/** nginx run with `config` (written to `dir`, which it owns and which goes when it stops) through `prefix`; once `url` answers. */
async function runNginx(dir: string, config: string, url: string, prefix: string[] = []): Promise<Nginx> {
  writeFileSync(join(dir, "nginx.conf"), config);
  const proc: Subprocess = Bun.spawn([...prefix, "nginx", "-p", dir, "-c", join(dir, "nginx.conf"), "-e", join(dir, "error.log")], {
    stdout: "pipe",
    stderr: "pipe",
  });
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      await fetch(url + "/healthz");
      break;
    } catch {
      if (proc.exitCode !== null || Date.now() > deadline) {
        proc.kill("SIGKILL");
        const err = await new Response(proc.stderr as ReadableStream).text();
        rmSync(dir, { recursive: true, force: true });
        throw new Error(`nginx did not start: ${err}`);
      }
      await Bun.sleep(50);
    }
  }
  return {
    url,
    accessLog: () => readFileSync(join(dir, "access.log"), "utf8"),
    async stop() {
      proc.kill("SIGQUIT");
      await proc.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

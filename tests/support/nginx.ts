// A real nginx (the Debian package) started by a test on loopback as the trusted proxy in front
// of a daemon: daemon off, its pid, logs and temp paths in a
// temp dir, HTTP Basic authentication from an htpasswd file, and `proxy_bind` so the daemon sees
// the chosen loopback address as the peer. docs/external-access.md shows the same snippet.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";

export interface Nginx {
  url: string;
  /** What nginx wrote to its access log so far. */
  accessLog(): string;
  stop(): Promise<void>;
}

export interface NginxOptions {
  upstream: string;
  bindAddress: string;
  sharedSecret: string;
  /** htpasswd lines, e.g. "ada:{PLAIN}wonderland". */
  users: string[];
  emailDomain: string;
  /** The port to listen on (when the daemon must know its public URL first); a free one otherwise. */
  port?: number;
}

export async function freePort(): Promise<number> {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  return port;
}

export async function startNginx(o: NginxOptions): Promise<Nginx> {
  const dir = mkdtempSync(join(tmpdir(), "roost-nginx-"));
  const port = o.port ?? (await freePort());
  writeFileSync(join(dir, "htpasswd"), o.users.join("\n") + "\n");
  const config = `
${process.getuid?.() === 0 ? "user root;" : ""}
daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 64; }
http {
  # As in docs/external-access.md: the log stream's route is logged without its query string,
  # where its stream token travels (EventSource cannot send headers).
  log_format roost_no_query '$remote_addr - $remote_user [$time_local] "$request_method $uri $server_protocol" $status $body_bytes_sent "$http_referer" "$http_user_agent"';
  access_log ${dir}/access.log combined;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  server {
    listen 127.0.0.1:${port};
    location ~ ^/v1/builds/[^/]+/logs/stream$ {
      access_log ${dir}/access.log roost_no_query;
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
  }
}
`;
  writeFileSync(join(dir, "nginx.conf"), config);
  const proc: Subprocess = Bun.spawn(["nginx", "-p", dir, "-c", join(dir, "nginx.conf"), "-e", join(dir, "error.log")], { stdout: "pipe", stderr: "pipe" });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      await fetch(url + "/healthz");
      break;
    } catch {
      if (proc.exitCode !== null || Date.now() > deadline) {
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

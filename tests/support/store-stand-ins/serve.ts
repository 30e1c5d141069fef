// The HTTP server of a store stand-in: a free port on loopback, each request handed over with its
// parsed URL.
import type { Server } from "bun";

export function serveStandIn(handle: (req: Request, url: URL) => Promise<Response>): Server<undefined> {
  return Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => handle(req, new URL(req.url)) });
}

// Run by tests/e2e/container-executor.test.ts inside a network namespace of its own (nsenter
// --net), which stands for a runner's host: 169.254.169.254 is an address of its lo with a
// stand-in cloud metadata service on port 80, and the daemon is at 127.0.0.1:<port> of that
// namespace, forwarded to a Unix socket (Unix sockets are files, not bound to a network
// namespace) that the test forwards on to the real daemon. So a build container whose runner runs
// here could reach both, were it not kept from them. Prints "ready" when it listens.
//   bun tests/support/netns-host.ts <port> <unix socket>
import { connect, createServer } from "node:net";

const [port, socketPath] = [Number(process.argv[2]), process.argv[3]!];

Bun.serve({ hostname: "169.254.169.254", port: 80, fetch: () => new Response("metadata stand-in: AccessKeyId=ASIASTANDIN\n") });

createServer((client) => {
  const upstream = connect(socketPath);
  client.pipe(upstream).pipe(client);
  client.on("error", () => upstream.destroy());
  upstream.on("error", () => client.destroy());
}).listen(port, "127.0.0.1", () => process.stdout.write("ready\n"));

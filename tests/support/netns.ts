// Hosts on one LAN, made of Linux network namespaces (ip-netns(8)), for the tests where several
// machines are the behaviour (docs/operations.md "Several hosts"). Each host is a namespace with
// its own loopback and one interface, eth0, with its own address on 10.253.<n>.0/24; a bridge in
// a namespace of its own is the switch. This process (the test: its clients and any server it
// runs in-process) joins the LAN through one veth pair, at .1. A program runs on a host through
// `nsenter --net=…` (util-linux), which execs it: the process id is the program's, so a signal
// sent to it reaches the program itself.
//
// Needs root, as CI and the test machines run (`ip` is iproute2, installed by
// scripts/ensure-test-tools); without it the test fails saying which command failed.
import { existsSync } from "node:fs";

export interface LanHost {
  /** The namespace's name (`ip netns list`). */
  name: string;
  /** Its eth0 address on the LAN. */
  address: string;
  /** Runs a command on this host: `[...host.run, program, ...args]`. */
  run: string[];
}

export interface Lan {
  /** This process's address on the LAN: where the hosts reach a server it runs. */
  address: string;
  hosts: Record<string, LanHost>;
  /** Removes every namespace and the veth pair. */
  stop(): Promise<void>;
}

async function ip(args: string[]): Promise<void> {
  const proc = Bun.spawn(["ip", ...args], { stdout: "pipe", stderr: "pipe" });
  const [err, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) throw new Error(`ip ${args.join(" ")}: exit ${code}: ${err.trim()}`);
}

/** A subnet 10.253.<n>.0/24 no interface of this machine is on yet (several test processes may each make a LAN). */
function freeSubnet(): string {
  const routes = Bun.spawnSync(["ip", "-4", "route"], { stdout: "pipe" }).stdout.toString();
  for (let attempt = 0; attempt < 50; attempt++) {
    const subnet = `10.253.${Math.floor(Math.random() * 254) + 1}`;
    if (!routes.includes(`${subnet}.`)) return subnet;
  }
  throw new Error("no free 10.253.<n>.0/24 subnet for the test LAN");
}

/** Namespaces of LANs whose test process is gone (killed before its exit handler ran): removed. */
function removeStale(): void {
  const listed = Bun.spawnSync(["ip", "netns", "list"], { stdout: "pipe" }).stdout.toString();
  for (const [, name, pid] of listed.matchAll(/^(roost-lan(\d+)-\S+)/gm)) {
    if (!existsSync(`/proc/${pid}`)) Bun.spawnSync(["ip", "netns", "del", name!], { stderr: "ignore" });
  }
}

/** Makes the LAN and one namespace per name, addressed .11, .12, … in the order given. */
export async function startLan(names: string[]): Promise<Lan> {
  removeStale();
  const id = crypto.randomUUID().slice(0, 6);
  const subnet = freeSubnet();
  // The test process's id in every name, so a later run can tell a LAN left behind (removeStale).
  const prefix = `roost-lan${process.pid}-${id}`;
  const switchNs = `${prefix}-switch`;
  const outside = `rl-${id}`;
  const made: string[] = [];
  const cleanup = () => {
    Bun.spawnSync(["ip", "link", "del", outside], { stderr: "ignore" });
    for (const ns of made) Bun.spawnSync(["ip", "netns", "del", ns], { stderr: "ignore" });
  };
  // A test process that ends without afterAll (a crash, a timeout) leaves nothing behind.
  process.once("exit", cleanup);
  try {
    await ip(["netns", "add", switchNs]);
    made.push(switchNs);
    await ip(["-n", switchNs, "link", "add", "br0", "type", "bridge", "forward_delay", "0"]);
    await ip(["-n", switchNs, "link", "set", "br0", "up"]);
    await ip(["link", "add", outside, "type", "veth", "peer", "name", "port0", "netns", switchNs]);
    await ip(["-n", switchNs, "link", "set", "port0", "master", "br0", "up"]);
    await ip(["addr", "add", `${subnet}.1/24`, "dev", outside]);
    await ip(["link", "set", outside, "up"]);
    const hosts: Record<string, LanHost> = {};
    for (const [i, name] of names.entries()) {
      const ns = `${prefix}-${name}`;
      const address = `${subnet}.${11 + i}`;
      await ip(["netns", "add", ns]);
      made.push(ns);
      await ip(["-n", ns, "link", "set", "lo", "up"]);
      await ip(["-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", `port${i + 1}`, "netns", switchNs]);
      await ip(["-n", switchNs, "link", "set", `port${i + 1}`, "master", "br0", "up"]);
      await ip(["-n", ns, "addr", "add", `${address}/24`, "dev", "eth0"]);
      await ip(["-n", ns, "link", "set", "eth0", "up"]);
      hosts[name] = { name: ns, address, run: ["nsenter", `--net=/run/netns/${ns}`] };
    }
    return {
      address: `${subnet}.1`,
      hosts,
      async stop() {
        cleanup();
        process.removeListener("exit", cleanup);
      },
    };
  } catch (error) {
    cleanup();
    process.removeListener("exit", cleanup);
    throw error;
  }
}

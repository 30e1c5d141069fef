// A stored SMTP password must not follow a changed server: a PATCH that points an e-mail
// notification at another host, port, security mode or CA without sending the password again is
// refused, so nobody who may edit the notification can make Roost hand the password (which the
// API never returns) to a server of their choosing, or send it unencrypted.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type TestApp } from "../helpers/app.ts";
import type { HostApiStandIn } from "../support/host-api-stand-in.ts";
import { SHA_A, createPipeline, createProject, startGithubFixture } from "../helpers/ci.ts";
import { createBuild } from "../../lib/builds/create.ts";
import { transitionBuild } from "../../lib/builds/transition.ts";
import { dispatchNotifications } from "../../lib/notifications/notifications.ts";

let t: TestApp;
let host: HostApiStandIn;
let owner: string;
let smtp: Bun.TCPSocketListener<{ data: boolean }>;
/** Every line the fake SMTP server (one that takes any login, over plain text) was sent. */
const heard: string[] = [];

beforeAll(async () => {
  ({ t, host, owner } = await startGithubFixture());
  smtp = Bun.listen<{ data: boolean }>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(socket) {
        socket.data = { data: false };
        socket.write("220 fake ESMTP\r\n");
      },
      data(socket, chunk) {
        for (const line of new TextDecoder()
          .decode(chunk)
          .split("\r\n")
          .filter((l) => l !== "")) {
          heard.push(line);
          if (socket.data.data) {
            if (line === ".") (socket.data.data = false), socket.write("250 queued\r\n");
            continue;
          }
          const verb = line.split(" ")[0]!.toUpperCase();
          if (verb === "EHLO") socket.write("250-fake\r\n250 AUTH PLAIN LOGIN\r\n");
          else if (verb === "AUTH") socket.write("235 ok\r\n");
          else if (verb === "DATA") (socket.data.data = true), socket.write("354 go on\r\n");
          else if (verb === "QUIT") socket.write("221 bye\r\n"), socket.end();
          else socket.write("250 ok\r\n");
        }
      },
    },
  });
});
afterAll(async () => {
  smtp.stop(true);
  t.close();
  await host.stop();
});

test("pointing an e-mail notification at another SMTP server without the password is refused; the password never reaches it", async () => {
  const project = await createProject(t, owner);
  const pipeline = await createPipeline(t, owner, project.id);
  const created = await t.call("POST", `/v1/projects/${project.id}/notifications`, {
    token: owner,
    body: {
      name: "mail",
      channel: "email",
      events: ["failed"],
      email: {
        host: "smtp.example.test",
        port: 587,
        security: "starttls",
        username: "roost",
        password: "the-smtp-password",
        from: "roost@example.test",
        to: ["team@example.test"],
      },
    },
  });
  expect(created.status).toBe(201);
  const path = `/v1/projects/${project.id}/notifications/${created.body.notification.id}`;

  // Another server (here: the fake one, plain text) while the stored password would be kept.
  const moved = await t.call("PATCH", path, { token: owner, body: { email: { host: "127.0.0.1", port: smtp.port, security: "none" } } });
  expect(moved.status).toBe(400);
  expect(moved.body.code).toBe("invalid_request");
  expect(moved.body.details).toEqual([{ path: "body.email.password", message: expect.stringContaining("password") }]);
  for (const change of [{ port: 2525 }, { security: "none" }, { tls_ca: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----" }]) {
    expect((await t.call("PATCH", path, { token: owner, body: { email: change } })).status).toBe(400);
  }

  const { build } = await createBuild(t.ctx, { pipelineId: pipeline.id, branch: "main", commitSha: SHA_A, triggerType: "manual", concurrencyKey: null });
  await transitionBuild(t.ctx, build.id, "start");
  await transitionBuild(t.ctx, build.id, "fail", { exit_code: 1, failure_reason: "step test exited with 1" });
  await dispatchNotifications(t.ctx, "http://roost.example.test");
  const password = Buffer.from("the-smtp-password").toString("base64");
  expect(heard.filter((l) => l.includes(password) || Buffer.from(l.split(" ").pop()!, "base64").toString().includes("the-smtp-password"))).toEqual([]);

  // With the password sent again, or without AUTH, the server may change; other fields never need it.
  expect(
    (
      await t.call("PATCH", path, {
        token: owner,
        body: { email: { host: "127.0.0.1", port: smtp.port, security: "none", password: "a-password-for-this-server" } },
      })
    ).status,
  ).toBe(200);
  expect((await t.call("PATCH", path, { token: owner, body: { email: { port: smtp.port + 1, username: null } } })).status).toBe(200);
  expect((await t.call("PATCH", path, { token: owner, body: { email: { to: ["lead@example.test"] }, events: ["failed", "fixed"] } })).status).toBe(200);
});

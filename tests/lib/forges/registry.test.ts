// One registration per forge (lib/forges/registry.ts): what the route table, the create body and
// the wire enums offer is exactly what the registry holds, so a forge added there is offered
// everywhere and one missing there is offered nowhere.
import { describe, expect, test } from "bun:test";
import { routes } from "../../../handlers/routes.ts";
import { FORGES, FORGE_NAMES, ConnectBodies, forgeOf } from "../../../lib/forges/registry.ts";
import { ForgeApiError } from "../../../lib/forges/http.ts";
import { IntegrationResource, RepositoryResource } from "../../../lib/integrations/wire.ts";
import { DeliveryResource } from "../../../lib/webhooks/wire.ts";

describe("the forge registry", () => {
  test("every forge has its receiver in the route table, and every receiver is a forge's", () => {
    const receivers = routes.filter((r) => r.path.startsWith("/v1/webhooks/")).map((r) => `${r.method} ${r.path}`);
    expect(receivers.sort()).toEqual(FORGE_NAMES.map((name) => `POST /v1/webhooks/${name}`).sort());
  });

  test("the wire enums of provider and host list the registered forges, in order", () => {
    for (const schema of [IntegrationResource.shape.provider, RepositoryResource.shape.provider, DeliveryResource.shape.host])
      expect(schema.options).toEqual(FORGE_NAMES);
    expect(FORGE_NAMES).toEqual(["github", "gitlab", "gitea", "git", "bitbucket"]);
  });

  test("POST /v1/integrations takes one body per forge, told apart by provider", () => {
    for (const forge of FORGES) {
      const result = ConnectBodies.safeParse({ provider: forge.name });
      expect(result.success).toBe(false);
      // Refused for its own fields, not for an unknown provider.
      expect(result.error?.issues.some((i) => i.path[0] === "provider")).toBe(false);
    }
    expect(ConnectBodies.safeParse({ provider: "bitbucket-server", name: "x" }).error?.issues[0]?.path).toEqual(["provider"]);
  });

  test("a stored name no forge has is a ForgeApiError, not a crash", () => {
    expect(forgeOf({ provider: "github" }).name).toBe("github");
    expect(() => forgeOf({ provider: "bitbucket-server" })).toThrow(ForgeApiError);
  });
});

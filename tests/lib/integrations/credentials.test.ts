// openCredentials (lib/integrations/credentials.ts) keeps what it opened per secret box and
// integration: new credentials sealed for the same integration are what the next request uses,
// and a box never hands out what another box opened.
import { expect, test } from "bun:test";
import { DecryptionError, createSecretBox } from "../../../lib/crypto/secret-box.ts";
import { openCredentials, sealCredentials } from "../../../lib/integrations/credentials.ts";
import type { Integration } from "../../../lib/integrations/store.ts";

const key = (byte: number) => new Uint8Array(32).fill(byte);

function integration(credentials_sealed: string): Integration {
  return {
    id: "integration-1",
    provider: "github",
    name: "GitHub",
    api_url: "https://api.github.com",
    web_url: "https://github.com",
    app_id: "1",
    installation_id: "2",
    credentials_sealed,
    created_by: null,
    created_at: 0,
    updated_at: 0,
    last_synced_at: null,
    last_sync_error: null,
  };
}

test("an integration's new credentials are opened at once, the old ones no longer handed out", async () => {
  const box = await createSecretBox(key(1));
  const first = integration(await sealCredentials(box, { webhook_secret: "the first secret" }));
  expect(await openCredentials(box, first)).toEqual({ webhook_secret: "the first secret" });
  expect(await openCredentials(box, { ...first })).toEqual({ webhook_secret: "the first secret" });
  const rotated = { ...first, credentials_sealed: await sealCredentials(box, { webhook_secret: "the second secret" }) };
  expect(await openCredentials(box, rotated)).toEqual({ webhook_secret: "the second secret" });
});

test("credentials another box opened are not handed out by a box with another key", async () => {
  const box = await createSecretBox(key(1));
  const other = await createSecretBox(key(2));
  const sealed = integration(await sealCredentials(box, { webhook_secret: "secret" }));
  expect(await openCredentials(box, sealed)).toEqual({ webhook_secret: "secret" });
  await expect(openCredentials(other, sealed)).rejects.toBeInstanceOf(DecryptionError);
});

test("the opened credentials are shared, so they cannot be changed by whoever reads them", async () => {
  const box = await createSecretBox(key(1));
  const opened = await openCredentials<{ webhook_secret: string }>(box, integration(await sealCredentials(box, { webhook_secret: "secret" })));
  expect(() => {
    opened.webhook_secret = "changed";
  }).toThrow(TypeError);
});

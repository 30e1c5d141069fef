// The signed-in person: who they are, and their API tokens (create: shown once; list; revoke).
import { useState } from "preact/hooks";
import { del, get, post } from "../api.ts";
import { FormError, LoadState, PageTitle, SecretOnce, StatusBadge, TextField, Table, useField, useForm, useLoad } from "../components.tsx";
import { ago, dateTime } from "../format.ts";
import { me } from "../session.ts";
import type { Token, TokenCreated } from "../types.ts";

export function Account() {
  const tokens = useLoad(() => get<{ tokens: Token[] }>("/v1/api-tokens"), []);
  const form = useForm();
  const { error, submit } = form;
  const name = useField(form, "name");
  const days = useField(form, "expires_in_days", "30");
  const [created, setCreated] = useState<TokenCreated | null>(null);
  const user = me.value!.user;
  const createToken = submit(async () => {
    setCreated(
      await post<TokenCreated>("/v1/api-tokens", {
        name: name.value,
        role: me.value!.credential.effective_role,
        expires_in_days: Number(days.value),
      }),
    );
    name.set("");
    await tokens.reload();
  });
  return (
    <section>
      <PageTitle title="Your account" />
      <p>
        {user.email} · role {user.role} · session until {dateTime(me.value!.credential.expires_at)}
      </p>
      <form class="panel" aria-label="Create an API token" onSubmit={createToken}>
        <h2>API tokens</h2>
        <div class="row">
          <TextField label="Name" {...name} required />
          <TextField label="Valid for (days)" {...days} type="number" />
        </div>
        <FormError error={error} fields={["name", "expires_in_days"]} />
        <button type="submit">Create token</button>
      </form>
      {created && <SecretOnce title={`API token ${created.name}.`} secret={created.token} />}
      <LoadState state={tokens} what="tokens" />
      {tokens.data && (
        <Table caption="API tokens" columns={["Name", "Prefix", "Role", "State", "Last used", "Expires", "Actions"]}>
          {tokens.data.tokens.map((t) => (
            <tr key={t.id}>
              <td>{t.name}</td>
              <td>
                <code>{t.prefix}…</code>
              </td>
              <td>{t.role}</td>
              <td>
                <StatusBadge status={t.is_revoked ? "revoked" : t.is_expired ? "expired" : "active"} />
              </td>
              <td>{ago(t.last_used_at)}</td>
              <td>{dateTime(t.expires_at)}</td>
              <td>
                {!t.is_revoked && (
                  <button
                    type="button"
                    class="danger small"
                    aria-label={`Revoke ${t.name}`}
                    onClick={async () => {
                      await del(`/v1/api-tokens/${encodeURIComponent(t.id)}`);
                      await tokens.reload();
                    }}
                  >
                    Revoke
                  </button>
                )}
              </td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}

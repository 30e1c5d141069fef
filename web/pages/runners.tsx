// Runners (admins): register one (its token shown once, with the exact command that runs it),
// the list with online/offline, labels, capabilities and last contact, token rotation, revocation.
import { useState } from "preact/hooks";
import { del, get, post } from "../api.ts";
import { ConfirmButton, FormError, LoadState, PageTitle, SecretOnce, StatusBadge, TextField, Table, useField, useForm, useLoad } from "../components.tsx";
import { ago } from "../format.ts";
import type { Runner } from "../types.ts";

/** A runner heartbeats while it runs (docs/runners.md); one unseen for 90 seconds is offline. */
export function runnerOnline(runner: Runner): boolean {
  return runner.last_seen_at !== null && Date.now() / 1000 - runner.last_seen_at < 90;
}

/**
 * The command that starts a registered runner, runnable as shown: with the `roost` program on
 * PATH, or in a checkout of Roost (where `roost` is `npm run roost --`; docs/runners.md).
 */
export function runnerCommand(id: string, token: string, from: "binary" | "checkout"): string {
  const env = `ROOST_URL=${window.location.origin} ROOST_RUNNER_ID=${id} ROOST_RUNNER_TOKEN=${token}`;
  return from === "binary" ? `${env} roost runner` : `${env} npm run roost -- runner`;
}

function RunnerCommand({ id, token, from }: { id: string; token: string; from: "binary" | "checkout" }) {
  return (
    <div class="secret-row">
      <code class="secret command" data-from={from}>
        {runnerCommand(id, token, from)}
      </code>
    </div>
  );
}

export function Runners() {
  const state = useLoad(() => get<{ runners: Runner[] }>("/v1/runners"), [], 5000);
  const form = useForm();
  const { error, submit } = form;
  const name = useField(form, "name");
  const labels = useField(form, "labels");
  const [secret, setSecret] = useState<{ id: string; name: string; token: string } | null>(null);
  const register = submit(async () => {
    const created = await post<{ runner: Runner; token: string }>("/v1/runners", {
      name: name.value,
      labels: labels.value.split(/[\s,]+/).filter(Boolean),
    });
    setSecret({ id: created.runner.id, name: created.runner.name, token: created.token });
    name.set("");
    labels.set("");
    await state.reload();
  });
  return (
    <section>
      <PageTitle title="Runners" />
      <form class="panel" aria-label="Register a runner" onSubmit={register}>
        <h2>Register a runner</h2>
        <div class="row">
          <TextField label="Name" {...name} required placeholder="mac-mini-1" />
          <TextField label="Labels (space-separated)" {...labels} placeholder="macos xcode-16" />
        </div>
        <FormError error={error} fields={["name", "labels"]} />
        <button type="submit">Register runner</button>
      </form>
      {secret && (
        <SecretOnce title={`Token of ${secret.name}.`} secret={secret.token}>
          <p>
            Start the runner on the machine that builds, <strong>as an OS user of its own</strong>: not root, and on Roost's own host not the user the daemon
            runs as (the runner refuses both there, exit 2). For example <code>sudo useradd --system --create-home roost-runner</code>, then run the command as
            that user (<code>sudo -u roost-runner env ROOST_URL=…</code>).
          </p>
          <p>
            With the <code>roost</code> program installed:
          </p>
          <RunnerCommand id={secret.id} token={secret.token} from="binary" />
          <p>
            In a checkout of Roost (in its directory, after <code>npm ci</code>):
          </p>
          <RunnerCommand id={secret.id} token={secret.token} from="checkout" />
          <p class="muted">The build machine needs git and Flutter; see Running a runner in docs/runners.md.</p>
        </SecretOnce>
      )}
      <LoadState state={state} what="runners" />
      {state.data && (
        <Table caption="Runners" columns={["Runner", "State", "Labels", "Capabilities", "Last contact", "Actions"]}>
          {state.data.runners.map((r) => (
            <tr key={r.id}>
              <td>
                <strong>{r.name}</strong>
                <br />
                <code class="muted">{r.id}</code>
              </td>
              <td>
                <StatusBadge status={r.revoked_at ? "revoked" : runnerOnline(r) ? "online" : "offline"} />
              </td>
              <td>{r.all_labels.join(", ") || "—"}</td>
              <td>
                {[
                  r.capabilities.os,
                  r.capabilities.arch,
                  r.capabilities.flutter_versions?.length ? `Flutter ${r.capabilities.flutter_versions.join(", ")}` : "",
                  r.capabilities.xcode ? `Xcode ${r.capabilities.xcode}` : "",
                  r.version ? `roost ${r.version}` : "",
                ]
                  .filter(Boolean)
                  .join(" · ") || "—"}
              </td>
              <td>{ago(r.last_seen_at)}</td>
              <td>
                {!r.revoked_at && (
                  <div class="row">
                    <ConfirmButton
                      label="Rotate token"
                      ariaLabel={`Rotate token of ${r.name}`}
                      question={`Rotate the token of ${r.name}? The runner stops until it gets the new one.`}
                      act={async () => {
                        const { token } = await post<{ token: string }>(`/v1/runners/${encodeURIComponent(r.id)}/token`);
                        setSecret({ id: r.id, name: r.name, token });
                      }}
                    />
                    <ConfirmButton
                      danger
                      label="Revoke"
                      ariaLabel={`Revoke ${r.name}`}
                      question={`Revoke ${r.name}? It can no longer take jobs.`}
                      act={async () => {
                        await del(`/v1/runners/${encodeURIComponent(r.id)}`);
                        await state.reload();
                      }}
                    />
                  </div>
                )}
              </td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}

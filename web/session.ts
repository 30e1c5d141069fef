// Who is signed in, and what the instance's first-run state is; the shell decides from these
// whether to show the setup wizard, sign-in, or the app.
import { computed, signal } from "@preact/signals";
import { ApiFailure, api, sessionExpired } from "./api.ts";
import type { Me, Role, SetupStatus } from "./types.ts";

export const setupStatus = signal<SetupStatus | null>(null);
/** undefined: not known yet; null: signed out. */
export const me = signal<Me | null | undefined>(undefined);
export const bootError = signal<string | null>(null);

const RANK: Record<Role, number> = { developer: 1, maintainer: 2, admin: 3, owner: 4 };

export function roleAtLeast(role: Role | null | undefined, minimum: Role): boolean {
  return role != null && RANK[role] >= RANK[minimum];
}

export const role = computed<Role | null>(() => me.value?.credential.effective_role ?? null);
export const isAdmin = computed(() => roleAtLeast(role.value, "admin"));

export async function loadSetupStatus(): Promise<SetupStatus> {
  const status = await api<SetupStatus>("GET", "/v1/setup/status", { quiet401: true });
  setupStatus.value = status;
  return status;
}

export async function loadMe(): Promise<void> {
  try {
    me.value = await api<Me>("GET", "/v1/users/me", { quiet401: true });
    sessionExpired.value = false;
  } catch (error) {
    if (error instanceof ApiFailure && error.status === 401) me.value = null;
    else throw error;
  }
}

export async function boot(): Promise<void> {
  try {
    const status = await loadSetupStatus();
    if (status.state === "ready") await loadMe();
    else me.value = null;
  } catch (error) {
    bootError.value = error instanceof Error ? error.message : String(error);
  }
}

export async function signOut(): Promise<void> {
  await api("POST", "/v1/auth/logout", { quiet401: true }).catch(() => {});
  me.value = null;
}

// The Roost web app: the shell decides between the first-run wizard, sign-in and the pages, and
// maps paths to pages (every path is a deep link: the daemon answers it with this app).
import "./app.css";
import { render } from "preact";
import { useEffect } from "preact/hooks";
import { sessionExpired } from "./api.ts";
import { location, match, navigate } from "./router.ts";
import { boot, bootError, isAdmin, me, setupStatus, signOut } from "./session.ts";
import { Notice } from "./components.tsx";
import { SetupWizard } from "./pages/setup.tsx";
import { OidcCallback, SignIn } from "./pages/sign-in.tsx";
import { Dashboard } from "./pages/dashboard.tsx";
import { NewProject, Projects } from "./pages/projects.tsx";
import { ProjectPage } from "./pages/project.tsx";
import { BuildPage } from "./pages/build.tsx";
import { PipelinePage } from "./pages/pipeline.tsx";
import { Runners } from "./pages/runners.tsx";
import { Admin } from "./pages/admin.tsx";
import { Account } from "./pages/account.tsx";

type Page = (props: Record<string, string>) => preact.JSX.Element | null;

const ROUTES: Array<[string, Page, "admin" | null]> = [
  ["/", Dashboard, null],
  ["/projects", Projects, null],
  ["/projects/new", NewProject, null],
  ["/projects/:project_id", ProjectPage, null],
  ["/projects/:project_id/builds/:build_id", BuildPage, null],
  ["/projects/:project_id/pipelines/:pipeline_id", PipelinePage, null],
  ["/runners", Runners, "admin"],
  ["/admin", Admin, "admin"],
  ["/account", Account, null],
];

function NotFound() {
  return (
    <section>
      <h1>Page not found</h1>
      <p>
        Nothing lives at <code>{location.value.path}</code>. <a href="/">Back to the dashboard</a>.
      </p>
    </section>
  );
}

function Forbidden() {
  return (
    <section>
      <h1>Not for your role</h1>
      <p>
        This page is for admins. <a href="/">Back to the dashboard</a>.
      </p>
    </section>
  );
}

function Header() {
  const path = location.value.path;
  const user = me.value?.user;
  const link = (href: string, label: string) => (
    <a href={href} aria-current={(href === "/" ? path === "/" : path.startsWith(href)) ? "page" : undefined}>
      {label}
    </a>
  );
  return (
    <header class="top">
      <a class="brand" href="/">
        <span aria-hidden="true">▲</span> Roost
      </a>
      <nav aria-label="Main">
        {link("/", "Dashboard")}
        {link("/projects", "Projects")}
        {isAdmin.value && link("/runners", "Runners")}
        {isAdmin.value && link("/admin", "Administration")}
      </nav>
      <div class="who">
        <a href="/account" title="Your account and API tokens">
          {user?.email}
        </a>
        <span class="role">{me.value?.credential.effective_role}</span>
        <button
          type="button"
          class="secondary small"
          onClick={async () => {
            await signOut();
            navigate("/sign-in?signed_out=1", { replace: true });
          }}
        >
          Sign out
        </button>
      </div>
    </header>
  );
}

function Shell() {
  useEffect(() => {
    void boot();
  }, []);
  const path = location.value.path;
  if (bootError.value)
    return (
      <main id="main" class="narrow">
        <Notice kind="error">{`Roost did not answer: ${bootError.value}`}</Notice>
      </main>
    );
  if (setupStatus.value === null || me.value === undefined)
    return (
      <main id="main" class="narrow">
        <p role="status">Loading…</p>
      </main>
    );
  if (setupStatus.value.state === "incomplete")
    return (
      <main id="main" class="narrow">
        <SetupWizard />
      </main>
    );
  if (path === "/auth/callback")
    return (
      <main id="main" class="narrow">
        <OidcCallback />
      </main>
    );
  if (me.value === null || sessionExpired.value)
    return (
      <main id="main" class="narrow">
        <SignIn expired={sessionExpired.value && me.value !== null} />
      </main>
    );
  if (path === "/sign-in" || path === "/setup") {
    navigate(new URLSearchParams(location.value.search).get("next") ?? "/", { replace: true });
    return null;
  }
  let page: preact.JSX.Element = <NotFound />;
  for (const [pattern, Component, needs] of ROUTES) {
    const params = match(pattern, path);
    if (params) {
      page = needs === "admin" && !isAdmin.value ? <Forbidden /> : <Component {...params} />;
      break;
    }
  }
  return (
    <>
      {/* The router takes same-page links over (web/router.ts), so the browser would not move focus: this link does it. */}
      <a
        class="skip"
        href="#main"
        onClick={(e) => {
          e.preventDefault();
          document.getElementById("main")?.focus();
        }}
      >
        Skip to content
      </a>
      <Header />
      <main id="main" tabIndex={-1}>
        {page}
      </main>
    </>
  );
}

render(<Shell />, document.getElementById("app")!);

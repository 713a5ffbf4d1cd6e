import { type JSX, render } from "preact";
import { useEffect, useLayoutEffect, useState } from "preact/hooks";
import type { Session } from "../../gen/calltrace/v1/auth_service_pb.js";
import type { OrganizationMembership } from "../../gen/calltrace/v1/team_service_pb.js";
import type { Permission } from "../../src/teams/permissions.js";
import { auth, messageOf, team, whenSignedOut } from "./api.js";
import { NewMenu, ProjectPicker } from "./components/project-picker.js";
import { Alerts } from "./pages/alerts.js";
import { AuditLog } from "./pages/audit-log.js";
import { InvitationPage } from "./pages/invitation.js";
import { Members } from "./pages/members.js";
import { Attribution } from "./pages/attribution.js";
import { Geography } from "./pages/geography.js";
import { Login } from "./pages/login.js";
import { Errors } from "./pages/errors.js";
import { Overview } from "./pages/overview.js";
import { Run } from "./pages/run.js";
import { Runs } from "./pages/runs.js";
import { Settings } from "./pages/settings.js";
import { Traces } from "./pages/traces.js";
import { base, navigate, onLinkClick, projectBase, useLocation } from "./router.js";
import { can, defaultProject, findProject, rememberProject, TeamContext } from "./team.js";
import "./styles.css";

const pages: { path: string; title: string; page: () => JSX.Element; permission?: Permission }[] = [
  { path: "/", title: "Overview", page: Overview },
  { path: "/attribution", title: "Attribution", page: Attribution },
  { path: "/traces", title: "Traces", page: Traces },
  { path: "/errors", title: "Errors", page: Errors },
  { path: "/runs", title: "Runs", page: Runs },
  { path: "/geography", title: "Geography", page: Geography },
  { path: "/alerts", title: "Alerts", page: Alerts },
  { path: "/settings", title: "Settings · API keys", page: Settings },
  { path: "/members", title: "Members", page: Members },
  { path: "/audit", title: "Audit log", page: AuditLog, permission: "audit.read" },
];

function App() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [signupOpen, setSignupOpen] = useState(true);
  const [ssoEnabled, setSsoEnabled] = useState(false);
  const [error, setError] = useState<string>();
  const { projectId, path } = useLocation();

  useEffect(() => {
    whenSignedOut(() => setSession(null));
    auth.getSession({}).then(
      (r) => {
        setSession(r.session ?? null);
        setSignupOpen(r.signupOpen);
        setSsoEnabled(r.ssoEnabled);
      },
      (e: unknown) => setError(messageOf(e)),
    );
  }, []);

  if (error) return <p class="error">Cannot reach the server: {error}</p>;
  if (session === undefined) return <p class="muted pad">Loading…</p>;
  const invitation = projectId === "" ? /^\/invite\/([^/]+)$/.exec(path)?.[1] : undefined;
  if (invitation) return <InvitationPage token={invitation} session={session} ssoEnabled={ssoEnabled} onSession={setSession} />;
  if (session === null) return <Login signupOpen={signupOpen} ssoEnabled={ssoEnabled} onSignedIn={(s) => setSession(s)} />;
  return <SignedIn key={session.userId} session={session} onSignedOut={() => setSession(null)} />;
}

/** The dashboard of a signed-in user: their organizations, and the pages of the project the URL names. */
function SignedIn({ session, onSignedOut }: { session: Session; onSignedOut: () => void }) {
  const [memberships, setMemberships] = useState<OrganizationMembership[]>();
  const [error, setError] = useState<string>();
  const { projectId, path } = useLocation();
  const reload = async () => {
    const fresh = (await team.listOrganizations({})).organizations;
    setMemberships(fresh);
    return fresh;
  };
  useEffect(() => {
    reload().catch((e: unknown) => setError(messageOf(e)));
  }, []);
  const found = memberships && findProject(memberships, projectId);
  // Stored as the page renders, not after paint: a reload or /app/ right after a switch finds it.
  useLayoutEffect(() => {
    if (found) rememberProject(found.project.id);
  }, [found?.project.id]);
  // An address without a project (/app/, or a link from before projects) opens the default project.
  const fallback = memberships && projectId === "" ? defaultProject(memberships, session) : undefined;
  useEffect(() => {
    if (fallback) navigate(projectBase(fallback.id) + path.slice(1) + location.search, true);
  }, [fallback?.id, path]);

  if (error) return <p class="error">Cannot load your organizations: {error}</p>;
  if (!memberships || fallback) return <p class="muted pad">Loading…</p>;
  const logOut = async () => {
    await auth.logOut({}).catch(() => undefined);
    onSignedOut();
    navigate(base);
  };
  const context = found && { session, memberships, ...found, reload };
  // A run has a page of its own, /runs/<id>, under the Runs entry of the navigation.
  const onRun = /^\/runs\/./.test(path);
  const current = context
    ? pages.find((p) => p.path === (onRun ? "/runs" : path) && (!p.permission || can(context.membership.role, p.permission)))
    : undefined;
  const Page = onRun ? Run : (current?.page ?? NotFound);
  return (
    <div class="shell" onClick={onLinkClick}>
      <header class="top">
        <span class="brand">calltrace</span>
        {context ? (
          <ProjectPicker team={context} />
        ) : (
          <NewMenu membership={undefined} reload={reload} onCreated={(id) => navigate(projectBase(id))} />
        )}
        {context && (
          <nav aria-label="Pages">
            {pages
              .filter((p) => !p.permission || can(context.membership.role, p.permission))
              .map((p) => (
                <a href={projectBase() + p.path.slice(1)} class={p === current ? "active" : ""} aria-current={p === current ? "page" : undefined}>
                  {p.title}
                </a>
              ))}
          </nav>
        )}
        <span class="who">
          <span class="email" title={session.email}>
            {session.email}
          </span>{" "}
          <button type="button" class="link" onClick={logOut}>
            Log out
          </button>
        </span>
      </header>
      <main>
        {context ? (
          <TeamContext.Provider value={context}>
            <Page key={context.project.id} />
          </TeamContext.Provider>
        ) : (
          <NoProject projectId={projectId} none={memberships.length === 0} />
        )}
      </main>
    </div>
  );
}

/** A project the user may not see (or that is gone), or no project at all. */
function NoProject({ projectId, none }: { projectId: string; none: boolean }) {
  const noOrganization = (
    <p>You belong to no organization. Create one with "New…" above, or open an invitation link a colleague sent you.</p>
  );
  if (!projectId) {
    return (
      <section data-no-project>
        <h1>No project yet</h1>
        {noOrganization}
      </section>
    );
  }
  return (
    <section data-not-found>
      <h1>Project not found</h1>
      <p>
        There is no project at <code>{location.pathname}</code> that you may see.{" "}
        {none ? "" : <>Go to <a href={base}>your default project</a>.</>}
      </p>
      {none && noOrganization}
    </section>
  );
}

/** Any address under /app/ that is no page. */
function NotFound() {
  return (
    <section data-not-found>
      <h1>Page not found</h1>
      <p>
        There is no page at <code>{location.pathname}</code>. Go to the <a href={projectBase()}>Overview</a>.
      </p>
    </section>
  );
}

render(<App />, document.getElementById("root")!);

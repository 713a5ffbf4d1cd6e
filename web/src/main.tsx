import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import type { Session } from "../../gen/calltrace/v1/auth_service_pb.js";
import { auth, messageOf, whenSignedOut } from "./api.js";
import { Attribution } from "./pages/attribution.js";
import { Geography } from "./pages/geography.js";
import { Login } from "./pages/login.js";
import { Overview } from "./pages/overview.js";
import { Settings } from "./pages/settings.js";
import { Traces } from "./pages/traces.js";
import { base, navigate, onLinkClick, useLocation } from "./router.js";
import "./styles.css";

const pages = [
  { path: "/", title: "Overview", page: Overview },
  { path: "/attribution", title: "Attribution", page: Attribution },
  { path: "/traces", title: "Traces", page: Traces },
  { path: "/geography", title: "Geography", page: Geography },
  { path: "/settings", title: "Settings · API keys", page: Settings },
];

function App() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [signupOpen, setSignupOpen] = useState(true);
  const [error, setError] = useState<string>();
  const { path } = useLocation();

  useEffect(() => {
    whenSignedOut(() => setSession(null));
    auth.getSession({}).then(
      (r) => {
        setSession(r.session ?? null);
        setSignupOpen(r.signupOpen);
      },
      (e: unknown) => setError(messageOf(e)),
    );
  }, []);

  if (error) return <p class="error">Cannot reach the server: {error}</p>;
  if (session === undefined) return <p class="muted pad">Loading…</p>;
  if (session === null) return <Login signupOpen={signupOpen} onSignedIn={(s) => setSession(s)} />;

  const current = pages.find((p) => p.path === path);
  const Page = current?.page ?? NotFound;
  const logOut = async () => {
    await auth.logOut({}).catch(() => undefined);
    setSession(null);
    navigate(base);
  };
  return (
    <div class="shell" onClick={onLinkClick}>
      <header class="top">
        <span class="brand">calltrace</span>
        <nav aria-label="Pages">
          {pages.map((p) => (
            <a href={base + p.path.slice(1)} class={p === current ? "active" : ""} aria-current={p === current ? "page" : undefined}>
              {p.title}
            </a>
          ))}
        </nav>
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
        <Page />
      </main>
    </div>
  );
}

/** Any address under /app/ that is no page. */
function NotFound() {
  return (
    <section data-not-found>
      <h1>Page not found</h1>
      <p>
        There is no page at <code>{location.pathname}</code>. Go to the <a href={base}>Overview</a>.
      </p>
    </section>
  );
}

render(<App />, document.getElementById("root")!);

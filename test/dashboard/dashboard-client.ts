/** The calls that act on one project. */
const projectScoped = /^(QueryService\/|PriceService\/|AlertService\/|AccountService\/(GetAccount|ListKeys|CreateKey|RevokeKey|RenameKey)$)/;

/** A JSON answer whose shape each test checks for itself. */
// biome-ignore lint/suspicious/noExplicitAny: tests read answers as loosely as JSON is
export type Json = Record<string, any>;

/** A Connect-JSON answer: HTTP status, parsed body, headers. */
export interface Answer {
  status: number;
  body: Record<string, unknown> & { code?: string; message?: string };
  headers: Headers;
}

/**
 * Calls the dashboard's Connect services over plain fetch the way the browser app does: it keeps
 * the cookies the server sets and echoes the CSRF cookie in `x-csrf-token`. Options let a test
 * leave the token out, forge it, or claim another Origin.
 */
export class DashboardClient {
  readonly cookies = new Map<string, string>();
  readonly setCookieHeaders: string[] = [];
  /**
   * The project that calls of QueryService and AccountService's key calls name when their body
   * names none, as the web app names the one in its address: the signed-in user's first project
   * after signUp or logIn.
   */
  project = "";

  constructor(readonly baseUrl: string) {}

  async call(
    method: string,
    body: unknown = {},
    options: { csrf?: string | false; origin?: string; forwardedFor?: string; headers?: Record<string, string> } = {},
  ): Promise<Answer> {
    const headers: Record<string, string> = { "content-type": "application/json", ...options.headers };
    if (this.cookies.size > 0) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
    const csrf = options.csrf === undefined ? this.cookies.get("ct_csrf") : options.csrf;
    if (csrf) headers["x-csrf-token"] = decodeURIComponent(csrf);
    if (options.origin) headers.origin = options.origin;
    if (options.forwardedFor) headers["x-forwarded-for"] = options.forwardedFor;
    const named = this.project && projectScoped.test(method) && typeof body === "object" && body !== null && !("projectId" in body);
    const sent = named ? { ...body, projectId: this.project } : body;
    const res = await fetch(`${this.baseUrl}/calltrace.v1.${method}`, { method: "POST", headers, body: JSON.stringify(sent) });
    for (const cookie of res.headers.getSetCookie()) {
      this.setCookieHeaders.push(cookie);
      const [pair] = cookie.split(";");
      const eq = pair!.indexOf("=");
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (/Max-Age=0(;|$)/.test(cookie)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const text = await res.text();
    const answer: Answer = { status: res.status, body: text ? (JSON.parse(text) as Answer["body"]) : {}, headers: res.headers };
    const session = (answer.body as Json).session as Json | undefined;
    if (/^AuthService\/(SignUp|LogIn)$/.test(method) && answer.status === 200 && session?.accountId) this.project = session.accountId;
    return answer;
  }

  /** Calls and insists on success. */
  async ok(method: string, body: unknown = {}): Promise<Json> {
    const answer = await this.call(method, body);
    if (answer.status !== 200) throw new Error(`${method} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
    return answer.body;
  }

  async signUp(email: string, password = "correct horse battery"): Promise<Json> {
    return this.ok("AuthService/SignUp", { email, password });
  }

  /** GETs a path with this client's cookies; a trace download names the client's project when the path names none. */
  get(path: string, headers: Record<string, string> = {}): Promise<Response> {
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
    const url = new URL(path, this.baseUrl);
    if (this.project && url.pathname.startsWith("/app/export/traces.") && !url.searchParams.has("project")) url.searchParams.set("project", this.project);
    return fetch(url, { headers: { ...(cookie ? { cookie } : {}), ...headers }, redirect: "manual" });
  }
}

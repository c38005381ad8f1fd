// Entry point: session, header, alerts banner and the client-side router.

import "uplot/dist/uPlot.min.css";
import "./style.css";
import { call, currentSession, get, setSession, setUnauthenticatedHandler } from "./api";
import { append, h, replace } from "./dom";
import { startAlerts, stopAlerts } from "./alerts";
import { navigate, setLoginNotice, setRenderer } from "./nav";
import type { PageCtx, Session } from "./types";
import { loginPage } from "./pages/login";
import { experimentsPage } from "./pages/experiments";
import { experimentPage } from "./pages/experiment";
import { configPage } from "./pages/config";
import { runPage } from "./pages/run";
import { plotsPage } from "./pages/plots";
import { devicesPage } from "./pages/devices";
import { usersPage } from "./pages/users";
import { tokensPage } from "./pages/tokens";
import { auditPage } from "./pages/audit";

type Page = (ctx: PageCtx) => Promise<void> | void;

const routes: [RegExp, Page, boolean][] = [
  // pattern, page, needs a session
  [/^\/login$/, loginPage, false],
  [/^\/(?:experiments)?$/, experimentsPage, true],
  [/^\/experiments\/(\d+)$/, experimentPage, true],
  [/^\/experiments\/(\d+)\/configs\/new$/, configPage, true],
  [/^\/experiments\/(\d+)\/plots$/, plotsPage, true],
  [/^\/configs\/(\d+)$/, configPage, true],
  [/^\/runs\/(\d+)$/, runPage, true],
  [/^\/admin\/devices$/, devicesPage, true],
  [/^\/admin\/users$/, usersPage, true],
  [/^\/admin\/audit$/, auditPage, true],
  [/^\/tokens$/, tokensPage, true],
];

let leaveHooks: (() => void)[] = [];

function header(s: Session | null): HTMLElement {
  const nav = h("nav", null, h("a", { href: "/experiments", class: "brand" }, "streamgauge manager"));
  if (s) {
    append(nav, [
      h("a", { href: "/experiments" }, "Experiments"),
      h("a", { href: "/admin/devices" }, "Devices"),
      s.user.role === "admin" ? h("a", { href: "/admin/users" }, "Users") : null,
      s.user.role === "admin" ? h("a", { href: "/admin/audit" }, "Audit log") : null,
      h("a", { href: "/tokens" }, "API tokens"),
      h("span", { class: "spacer" }),
      h("span", { class: "who", id: "whoami" }, `${s.user.username} (${s.user.role})`),
      h("button", { type: "button", class: "link", id: "logout", onclick: () => void logout() }, "Log out"),
    ]);
  }
  return nav;
}

async function logout(): Promise<void> {
  try {
    await call("POST", "/logout", {});
  } catch {
    // the session may be gone already; the page forgets it either way
  }
  setSession(null);
  stopAlerts();
  navigate("/login");
}

async function render(): Promise<void> {
  for (const f of leaveHooks) {
    try {
      f();
    } catch {
      // a failing cleanup must not block the next page
    }
  }
  leaveHooks = [];
  const app = document.getElementById("app")!;
  const path = location.pathname.replace(/\/+$/, "") || "/";
  const match = routes.find(([re]) => re.test(path));
  if (!match) {
    replace(app, h("h1", null, "Not found"), h("p", null, `There is no page at ${path}. `, h("a", { href: "/experiments" }, "Experiments")));
    return;
  }
  const [re, page, needsSession] = match;
  if (needsSession && !currentSession()) {
    navigate(`/login?next=${encodeURIComponent(location.pathname + location.search)}`, true);
    return;
  }
  replace(document.getElementById("top")!, header(currentSession()));
  if (currentSession()) startAlerts();
  const params = (re.exec(path) ?? []).slice(1);
  replace(app);
  app.dataset.page = page.name;
  try {
    await page({
      app,
      params,
      query: new URLSearchParams(location.search),
      onLeave: (f) => leaveHooks.push(f),
    });
  } catch (e) {
    app.append(h("div", { class: "msg error", role: "alert" }, String(e instanceof Error ? e.message : e)));
  }
}

async function boot(): Promise<void> {
  setRenderer(render);
  setUnauthenticatedHandler((code) => {
    if (!currentSession()) return;
    setSession(null);
    stopAlerts();
    setLoginNotice(code === "session_expired" ? "Your session expired: log in again." : "You are logged out: log in again.");
    navigate(`/login?next=${encodeURIComponent(location.pathname + location.search)}`);
  });
  document.addEventListener("click", (ev) => {
    if (ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
    const a = (ev.target as Element | null)?.closest?.("a");
    if (!a || a.hasAttribute("download") || a.target || a.origin !== location.origin) return;
    if (a.pathname.startsWith("/api/")) return;
    ev.preventDefault();
    navigate(a.pathname + a.search);
  });
  window.addEventListener("popstate", () => void render());
  try {
    setSession(await get<Session>("/session"));
  } catch {
    setSession(null);
  }
  await render();
}

void boot();

import { post, setSession, errorText, ApiError } from "../api";
import { h, Message } from "../dom";
import { navigate, takeLoginNotice } from "../nav";
import type { PageCtx, Session } from "../types";

export function loginPage({ app, query }: PageCtx): void {
  const msg = new Message();
  const notice = takeLoginNotice();
  if (notice) msg.info(notice);
  const user = h("input", { id: "username", name: "username", autocomplete: "username", required: true, autofocus: true });
  const pass = h("input", { id: "password", name: "password", type: "password", autocomplete: "current-password", required: true });
  const button = h("button", { type: "submit", id: "login" }, "Log in");
  const form = h(
    "form",
    { class: "card narrow", id: "login-form" },
    h("h1", null, "Log in"),
    h("label", { for: "username" }, "User name"),
    user,
    h("label", { for: "password" }, "Password"),
    pass,
    button,
    msg.el,
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    button.disabled = true;
    msg.clear();
    try {
      const s = await post<Session>("/login", { username: user.value, password: pass.value });
      setSession(s);
      const next = query.get("next");
      navigate(next && next.startsWith("/") && !next.startsWith("//") && !next.startsWith("/login") ? next : "/experiments", true);
    } catch (e) {
      if (e instanceof ApiError && e.code === "rate_limited" && typeof e.details?.["retry_after_s"] === "number") {
        msg.error(`${e.message} (try again in ${e.details["retry_after_s"]} s)`);
      } else {
        msg.error(errorText(e));
      }
      pass.value = "";
      pass.focus();
    } finally {
      button.disabled = false;
    }
  });
  app.append(form);
}

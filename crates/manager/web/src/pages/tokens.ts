import { get, post, del, asList, errorText } from "../api";
import { h, Message, replace, fmtTime } from "../dom";
import type { PageCtx, Token } from "../types";

export async function tokensPage({ app }: PageCtx): Promise<void> {
  const msg = new Message();
  const secret = h("div", { id: "token-secret", class: "msg info", hidden: true });
  const list = h("div", { id: "token-list" });
  const name = h("input", { id: "token-name", required: true, placeholder: "e.g. testbed-controller" });
  const form = h("form", { class: "inline", id: "token-form" }, h("label", { for: "token-name" }, "Name "), name, h("button", { type: "submit", class: "primary" }, "Create token"));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    msg.clear();
    try {
      const t = await post<Token>("/tokens", { name: name.value.trim() });
      replace(secret, "Token ", h("strong", null, t.name), " created. Copy its secret now, it is not shown again: ", h("code", { class: "secret" }, t.secret ?? ""),
        h("div", { class: "muted" }, "Use it as: Authorization: Bearer <secret>"));
      secret.hidden = false;
      name.value = "";
      await load();
    } catch (e) {
      msg.error(errorText(e));
    }
  });
  app.append(h("h1", null, "API tokens"), h("p", { class: "muted" }, "Tokens let scripts and control frameworks act as you through the API."), msg.el, secret, form, list);

  async function load(): Promise<void> {
    let tokens: Token[];
    try {
      tokens = asList<Token>(await get<unknown>("/tokens"), "tokens");
    } catch (e) {
      replace(list, h("div", { class: "msg error" }, errorText(e)));
      return;
    }
    replace(list, tokens.length === 0 ? h("p", { class: "muted" }, "No tokens.") : h("table", { class: "data" },
      h("thead", null, h("tr", null, h("th", null, "Name"), h("th", null, "Created"), h("th", null, "Last used"), h("th", null, ""))),
      h("tbody", null, tokens.map((t) => h("tr", { "data-token": t.id },
        h("td", null, t.name), h("td", null, fmtTime(t.created_unix_s)), h("td", null, fmtTime(t.last_used_unix_s)),
        h("td", null, h("button", { type: "button", class: "link danger", onclick: async () => {
          if (!confirm(`Revoke token ${t.name}?`)) return;
          try {
            await del(`/tokens/${t.id}`);
            await load();
          } catch (e) {
            msg.error(errorText(e));
          }
        } }, "revoke")))))));
  }
  await load();
}

import { get, post, patch, del, asList, errorText } from "../api";
import { h, Message, replace } from "../dom";
import type { PageCtx, User } from "../types";

export async function usersPage({ app }: PageCtx): Promise<void> {
  const msg = new Message();
  const list = h("div", { id: "user-list" });
  const username = h("input", { id: "user-name", required: true, autocomplete: "off" });
  const password = h("input", { id: "user-password", type: "password", required: true, autocomplete: "new-password" });
  const role = h("select", { id: "user-role" }, h("option", { value: "user" }, "user"), h("option", { value: "admin" }, "admin"));
  const form = h("form", { class: "card", id: "user-form" }, h("h2", null, "Add a user"),
    h("div", { class: "grid" },
      h("label", { for: "user-name" }, "User name"), username,
      h("label", { for: "user-password" }, "Password"), password,
      h("label", { for: "user-role" }, "Role"), role),
    h("button", { type: "submit", class: "primary", id: "user-create" }, "Add user"));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    msg.clear();
    try {
      await post("/users", { username: username.value.trim(), password: password.value, role: role.value });
      msg.info(`User ${username.value.trim()} added.`);
      username.value = "";
      password.value = "";
      await load();
    } catch (e) {
      msg.error(errorText(e));
    }
  });
  app.append(h("h1", null, "Users and roles"), msg.el, list, form);

  async function load(): Promise<void> {
    let users: User[];
    try {
      users = asList<User>(await get<unknown>("/users"), "users");
    } catch (e) {
      replace(list, h("div", { class: "msg error", role: "alert" }, errorText(e)));
      return;
    }
    replace(list, h("table", { class: "data" },
      h("thead", null, h("tr", null, h("th", null, "User"), h("th", null, "Role"), h("th", null, ""))),
      h("tbody", null, users.map((u) => {
        const r = h("select", { "aria-label": `role of ${u.username}` }, h("option", { value: "user" }, "user"), h("option", { value: "admin" }, "admin"));
        r.value = u.role;
        r.addEventListener("change", async () => {
          msg.clear();
          try {
            await patch(`/users/${u.id}`, { role: r.value });
            msg.info(`${u.username} is now ${r.value}.`);
          } catch (e) {
            r.value = u.role;
            msg.error(errorText(e));
          }
        });
        return h("tr", { "data-user": u.username },
          h("td", null, u.username), h("td", null, r),
          h("td", null,
            h("button", { type: "button", class: "link", onclick: async () => {
              const p = prompt(`New password for ${u.username}`);
              if (!p) return;
              try {
                await patch(`/users/${u.id}`, { password: p });
                msg.info(`Password of ${u.username} changed.`);
              } catch (e) {
                msg.error(errorText(e));
              }
            } }, "set password"), " ",
            h("button", { type: "button", class: "link danger", onclick: async () => {
              if (!confirm(`Delete user ${u.username}?`)) return;
              try {
                await del(`/users/${u.id}`);
                await load();
              } catch (e) {
                msg.error(errorText(e));
              }
            } }, "delete")));
      }))));
  }
  await load();
}

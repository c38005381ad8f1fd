import { get, asList, errorText } from "../api";
import { h, replace, fmtTime } from "../dom";
import type { PageCtx } from "../types";

interface AuditEntry {
  id?: number;
  time_unix_s?: number;
  unix_s?: number;
  user?: string | null;
  action?: string;
  object?: string;
  summary?: string;
}

export async function auditPage({ app }: PageCtx): Promise<void> {
  const list = h("div", { id: "audit-list" }, h("p", { class: "muted" }, "Loading…"));
  app.append(h("h1", null, "Audit log"), h("p", { class: "muted" }, "The newest 200 state-changing actions."), list);
  try {
    const entries = asList<AuditEntry>(await get<unknown>("/audit?limit=200"), "entries");
    replace(list, h("table", { class: "data" },
      h("thead", null, h("tr", null, ["Time", "User", "Action", "Object", "Summary"].map((t) => h("th", null, t)))),
      h("tbody", null, entries.map((e) => h("tr", null,
        h("td", null, fmtTime(e.time_unix_s ?? e.unix_s)), h("td", null, e.user ?? "—"), h("td", null, e.action ?? ""),
        h("td", null, e.object ?? ""), h("td", null, e.summary ?? ""))))));
  } catch (e) {
    replace(list, h("div", { class: "msg error", role: "alert" }, errorText(e)));
  }
}

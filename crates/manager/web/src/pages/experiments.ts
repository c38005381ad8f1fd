import { get, post, asList, errorText } from "../api";
import { h, Message, replace } from "../dom";
import { navigate } from "../nav";
import type { Device, Experiment, PageCtx } from "../types";

export async function experimentsPage({ app }: PageCtx): Promise<void> {
  const msg = new Message();
  const list = h("div", { id: "experiment-list" }, h("p", { class: "muted" }, "Loading…"));
  const name = h("input", { id: "exp-name", name: "name", required: true, placeholder: "wifi-handover" });
  const domain = h("input", { id: "exp-domain", name: "domain", placeholder: "default: the name, with _ for other characters" });
  const collector = h("select", { id: "exp-collector", name: "collector" }, h("option", { value: "" }, "none"));
  const description = h("input", { id: "exp-description", name: "description" });
  const form = h(
    "form",
    { class: "card", id: "experiment-form" },
    h("h2", null, "New experiment"),
    h("div", { class: "grid" },
      h("label", { for: "exp-name" }, "Name"), name,
      h("label", { for: "exp-domain" }, "Domain"), domain,
      h("label", { for: "exp-collector" }, "Collection server"), collector,
      h("label", { for: "exp-description" }, "Description"), description,
    ),
    h("button", { type: "submit", id: "exp-create" }, "Create experiment"),
    msg.el,
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    msg.clear();
    const body: Record<string, unknown> = { name: name.value.trim() };
    if (domain.value.trim()) body["domain"] = domain.value.trim();
    if (collector.value) body["collector"] = Number(collector.value);
    if (description.value.trim()) body["description"] = description.value.trim();
    try {
      const e = await post<Experiment>("/experiments", body);
      navigate(`/experiments/${e.id}`);
    } catch (e) {
      msg.error(errorText(e));
    }
  });
  app.append(h("h1", null, "Experiments"), list, form);

  get<unknown>("/devices")
    .then((d) => {
      for (const dev of asList<Device>(d, "devices").filter((x) => x.kind === "collector")) {
        collector.append(h("option", { value: dev.id }, `${dev.name} (${dev.hostname}:${dev.port})`));
      }
    })
    .catch(() => {});

  try {
    const exps = asList<Experiment>(await get<unknown>("/experiments"), "experiments");
    if (exps.length === 0) {
      replace(list, h("p", { class: "muted" }, "No experiments yet: create one below."));
      return;
    }
    replace(
      list,
      h(
        "table",
        { class: "data" },
        h("thead", null, h("tr", null, h("th", null, "Name"), h("th", null, "Domain"), h("th", null, "Owner"), h("th", null, "Members"), h("th", null, "Description"))),
        h(
          "tbody",
          null,
          exps.map((e) =>
            h(
              "tr",
              { "data-experiment": e.id },
              h("td", null, h("a", { href: `/experiments/${e.id}` }, e.name)),
              h("td", null, h("code", null, e.domain)),
              h("td", null, e.owner),
              h("td", null, (e.members ?? []).join(", ") || "—"),
              h("td", null, e.description || ""),
            ),
          ),
        ),
      ),
    );
  } catch (e) {
    replace(list, h("div", { class: "msg error", role: "alert" }, errorText(e)));
  }
}

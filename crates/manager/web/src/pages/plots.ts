import { get, errorText } from "../api";
import { h } from "../dom";
import { plotPanel } from "../plotpanel";
import { setDefinitionDomain } from "../plotexport";
import type { Experiment, PageCtx } from "../types";

export async function plotsPage({ app, params, onLeave }: PageCtx): Promise<void> {
  const id = Number(params[0]);
  const box = h("section", { id: "plot-panel" });
  app.append(h("p", { class: "crumbs" }, h("a", { href: "/experiments" }, "Experiments"), " / ", h("a", { href: `/experiments/${id}`, id: "crumb-exp" }, `experiment ${id}`), " / live plots"),
    h("h1", null, "Live plots"), box);
  get<Experiment>(`/experiments/${id}`)
    .then((e) => {
      const c = document.getElementById("crumb-exp");
      if (c) c.textContent = e.name;
      setDefinitionDomain(e.domain);
    })
    .catch((e) => app.insertBefore(h("div", { class: "msg error", role: "alert" }, errorText(e)), box));
  await plotPanel(id, box, onLeave);
}

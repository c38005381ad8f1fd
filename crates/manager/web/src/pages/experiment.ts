import { get, post, del, asList, errorText } from "../api";
import { h, Message, replace, fmtTime } from "../dom";
import { navigate } from "../nav";
import { runButtons, stateBadge } from "../runctl";
import type { CaptureConfig, Device, Experiment, PageCtx, Run } from "../types";

export async function experimentPage({ app, params }: PageCtx): Promise<void> {
  const id = Number(params[0]);
  const msg = new Message();
  let exp: Experiment;
  try {
    exp = await get<Experiment>(`/experiments/${id}`);
  } catch (e) {
    app.append(h("h1", null, "Experiment"), h("div", { class: "msg error", role: "alert" }, errorText(e)));
    return;
  }
  const devices = asList<Device>(await get<unknown>("/devices").catch(() => []), "devices");
  const deviceName = (d: number): string => devices.find((x) => x.id === d)?.name ?? `device ${d}`;

  const members = h("div", { id: "members" });
  const configs = h("div", { id: "configs" });
  const runs = h("div", { id: "runs" });
  const runForm = h("form", { class: "card", id: "run-form" });

  app.append(
    h("p", { class: "crumbs" }, h("a", { href: "/experiments" }, "Experiments"), " / ", exp.name),
    h("h1", null, exp.name),
    h("p", null, "Domain ", h("code", null, exp.domain), ` · owner ${exp.owner}`, exp.description ? ` · ${exp.description}` : ""),
    h("p", null,
      h("a", { class: "button", href: `/experiments/${id}/plots`, id: "open-plots" }, "Live plots"), " ",
      h("button", { type: "button", class: "danger", id: "exp-delete", onclick: () => void remove() }, "Delete experiment"),
    ),
    msg.el,
    h("section", null, h("h2", null, "Members"), members),
    h("section", null, h("h2", null, "Capture configurations"), configs),
    h("section", null, h("h2", null, "Runs"), runForm, runs),
  );

  async function remove(): Promise<void> {
    if (!confirm(`Delete experiment ${exp.name}?`)) return;
    try {
      await del(`/experiments/${id}`);
      navigate("/experiments");
    } catch (e) {
      msg.error(errorText(e));
    }
  }

  function renderMembers(): void {
    const input = h("input", { id: "member-name", placeholder: "user name", required: true });
    const form = h("form", { class: "inline", id: "member-form" }, input, h("button", { type: "submit" }, "Add member"));
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      msg.clear();
      try {
        const r = await post<Experiment | undefined>(`/experiments/${id}/members`, { username: input.value.trim() });
        exp = r && "members" in r ? r : await get<Experiment>(`/experiments/${id}`);
        renderMembers();
      } catch (e) {
        msg.error(errorText(e));
      }
    });
    replace(
      members,
      h("ul", { class: "members" },
        h("li", null, `${exp.owner} (owner)`),
        (exp.members ?? []).map((m) =>
          h("li", { "data-member": m }, m, " ",
            h("button", {
              type: "button", class: "link", onclick: async () => {
                msg.clear();
                try {
                  await del(`/experiments/${id}/members/${encodeURIComponent(m)}`);
                  exp = await get<Experiment>(`/experiments/${id}`);
                  renderMembers();
                } catch (e) {
                  msg.error(errorText(e));
                }
              },
            }, "remove"),
          ),
        ),
      ),
      form,
    );
  }

  let cfgs: CaptureConfig[] = [];
  async function loadConfigs(): Promise<void> {
    try {
      cfgs = asList<CaptureConfig>(await get<unknown>(`/experiments/${id}/configs`), "configs");
    } catch (e) {
      replace(configs, h("div", { class: "msg error" }, errorText(e)));
      return;
    }
    replace(
      configs,
      cfgs.length === 0
        ? h("p", { class: "muted" }, "No configuration saved yet.")
        : h("table", { class: "data" },
            h("thead", null, h("tr", null, h("th", null, "Name"), h("th", null, "Device"), h("th", null, "Storage"), h("th", null, "Version"), h("th", null, ""))),
            h("tbody", null, cfgs.map((c) =>
              h("tr", { "data-config": c.id },
                h("td", null, h("a", { href: `/configs/${c.id}` }, c.name)),
                h("td", null, deviceName(c.device)),
                h("td", null, c.storage?.type ?? "local", c.storage?.target ? ` → ${c.storage.target}` : ""),
                h("td", null, String(c.version)),
                h("td", null,
                  h("a", { href: `/configs/${c.id}` }, "edit"), " ",
                  h("button", { type: "button", class: "link", onclick: () => void copy(c) }, "copy"), " ",
                  h("button", { type: "button", class: "link danger", onclick: () => void removeConfig(c) }, "delete"),
                ),
              ),
            )),
          ),
      h("p", null, h("a", { class: "button", href: `/experiments/${id}/configs/new`, id: "new-config" }, "New configuration")),
    );
    renderRunForm();
  }

  async function copy(c: CaptureConfig): Promise<void> {
    const name = prompt(`Name of the copy of ${c.name}`, `${c.name}-copy`);
    if (!name) return;
    try {
      const n = await post<CaptureConfig>(`/configs/${c.id}/copy`, { name });
      navigate(`/configs/${n.id}`);
    } catch (e) {
      msg.error(errorText(e));
    }
  }

  async function removeConfig(c: CaptureConfig): Promise<void> {
    if (!confirm(`Delete configuration ${c.name}?`)) return;
    try {
      await del(`/configs/${c.id}`);
      await loadConfigs();
    } catch (e) {
      msg.error(errorText(e));
    }
  }

  function renderRunForm(): void {
    const cfg = h("select", { id: "run-config", required: true }, cfgs.map((c) => h("option", { value: c.id }, c.name)));
    const devBox = h("div", { class: "checks", id: "run-devices" });
    const fillDevices = (): void => {
      const chosen = cfgs.find((c) => c.id === Number(cfg.value));
      // A configuration runs on devices of its device's kind (capture daemons or in-line agents).
      const kind = devices.find((d) => d.id === chosen?.device)?.kind ?? "capture";
      replace(devBox, devices.filter((d) => d.kind === kind).map((d) =>
        h("label", { class: "check" },
          h("input", { type: "checkbox", value: d.id, name: "device", checked: chosen?.device === d.id }),
          ` ${d.name} `, h("span", { class: `status ${d.status}` }, d.status),
        ),
      ));
    };
    cfg.addEventListener("change", fillDevices);
    fillDevices();
    const create = async (start: boolean): Promise<void> => {
      msg.clear();
      const chosen = [...devBox.querySelectorAll<HTMLInputElement>("input:checked")].map((i) => Number(i.value));
      const body: Record<string, unknown> = { config: Number(cfg.value) };
      if (chosen.length) body["devices"] = chosen;
      try {
        let run = await post<Run>(`/experiments/${id}/runs`, body);
        if (start) run = await post<Run>(`/runs/${run.id}/start`, {});
        if (start) navigate(`/runs/${run.id}`);
        else await loadRuns();
      } catch (e) {
        msg.error(errorText(e));
        await loadRuns();
      }
    };
    replace(
      runForm,
      h("h3", null, "New run"),
      cfgs.length === 0
        ? h("p", { class: "muted" }, "Save a configuration first.")
        : [
            h("div", { class: "grid" }, h("label", { for: "run-config" }, "Configuration"), cfg, h("span", null, "Devices"), devBox),
            h("button", { type: "button", id: "run-create", onclick: () => void create(false) }, "Create run"), " ",
            h("button", { type: "button", id: "run-create-start", class: "primary", onclick: () => void create(true) }, "Create and start"),
          ],
    );
  }

  async function loadRuns(): Promise<void> {
    let list: Run[];
    try {
      list = asList<Run>(await get<unknown>(`/experiments/${id}/runs`), "runs");
    } catch (e) {
      replace(runs, h("div", { class: "msg error" }, errorText(e)));
      return;
    }
    list.sort((a, b) => b.id - a.id);
    replace(
      runs,
      list.length === 0
        ? h("p", { class: "muted" }, "No runs yet.")
        : h("table", { class: "data", id: "run-table" },
            h("thead", null, h("tr", null, h("th", null, "Run"), h("th", null, "Configuration"), h("th", null, "Created"), h("th", null, "State"), h("th", null, "Devices"), h("th", null, "Control"))),
            h("tbody", null, list.map((r) =>
              h("tr", { "data-run": r.id },
                h("td", null, h("a", { href: `/runs/${r.id}` }, `#${r.id} results`)),
                h("td", null, cfgs.find((c) => c.id === r.config)?.name ?? String(r.config)),
                h("td", null, fmtTime(r.created_unix_s)),
                h("td", null, stateBadge(r.state)),
                h("td", null, (r.devices ?? []).map((d) => h("div", null, `${deviceName(d.device)}: `, stateBadge(d.state), d.reason ? ` ${d.reason}` : ""))),
                h("td", null, runButtons(r, () => void loadRuns(), (m) => msg.error(m))),
              ),
            )),
          ),
    );
  }

  renderMembers();
  await loadConfigs();
  await loadRuns();
}

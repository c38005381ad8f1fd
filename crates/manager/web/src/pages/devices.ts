// Devices (capture daemons, in-line agents, collection servers) and sites.
// Everyone sees the list; admins add, edit, delete and refresh.

import { get, post, put, del, asList, errorText, currentSession } from "../api";
import { h, Message, replace, fmtTime } from "../dom";
import type { Capabilities, Device, InlineCapabilities, PageCtx, Site } from "../types";

export async function devicesPage({ app }: PageCtx): Promise<void> {
  const admin = currentSession()?.user.role === "admin";
  const msg = new Message();
  const table = h("div", { id: "device-list" });
  const formBox = h("div", { id: "device-form-box" });
  const siteBox = h("div", { id: "sites" });
  app.append(h("h1", null, "Devices"), msg.el, table, formBox, h("h2", null, "Sites"), siteBox);
  let sites: Site[] = [];

  const siteName = (id: number | null): string => sites.find((s) => s.id === id)?.name ?? (id === null ? "—" : `site ${id}`);

  function deviceForm(d: Device | null): void {
    const name = h("input", { id: "dev-name", required: true, value: d?.name ?? "" });
    const kind = h("select", { id: "dev-kind" }, [["capture", "capture daemon"], ["inline", "in-line agent"], ["collector", "collection server"]].map(([v, l]) => h("option", { value: v }, l)));
    kind.value = d?.kind ?? "capture";
    const site = h("select", { id: "dev-site" }, h("option", { value: "" }, "none"), sites.map((s) => h("option", { value: s.id }, s.name)));
    site.value = d?.site !== null && d?.site !== undefined ? String(d.site) : "";
    const hostname = h("input", { id: "dev-hostname", required: true, value: d?.hostname ?? "127.0.0.1" });
    const port = h("input", { id: "dev-port", type: "number", min: "1", max: "65535", required: true, value: d?.port ?? "" });
    const description = h("input", { id: "dev-description", value: d?.description ?? "" });
    const cred = h("input", { id: "dev-credential", value: d?.credential_ref ?? "", placeholder: "name of a line of the credentials file" });
    const fingerprint = h("input", { id: "dev-fingerprint", value: d?.tls_fingerprint ?? "", placeholder: "SHA-256 of its certificate (AB:CD:…)", size: 40 });
    const caFile = h("input", { id: "dev-ca-file", value: d?.ca_file ?? "", placeholder: "or: CA file on the manager's host" });
    const insecure = h("input", { id: "dev-insecure", type: "checkbox", checked: d?.insecure ?? false });
    const seen = h("div", { id: "dev-fingerprint-seen", class: "muted" });
    const fetchFp = h("button", { type: "button", id: "dev-fetch-fingerprint", onclick: async () => {
      msg.clear();
      try {
        const r = await post<{ tls_fingerprint: string; pinned_by: string[] }>("/devices/certificate",
          { hostname: hostname.value.trim(), port: Number(port.value) });
        fingerprint.value = r.tls_fingerprint;
        replace(seen, h("span", null,
          "The device presents this certificate. Compare it with the fingerprint the device printed at its first start before saving: saving pins it.",
          r.pinned_by.length ? ` Already pinned by ${r.pinned_by.join(", ")}.` : ""));
      } catch (e) {
        msg.error(errorText(e));
      }
    } }, "Ask the device");
    const form = h("form", { class: "card", id: "device-form" },
      h("h2", null, d ? `Edit device ${d.name}` : "Add a device"),
      h("div", { class: "grid" },
        h("label", { for: "dev-name" }, "Name"), name,
        h("label", { for: "dev-kind" }, "Kind"), kind,
        h("label", { for: "dev-site" }, "Site"), site,
        h("label", { for: "dev-hostname" }, "Host name"), hostname,
        h("label", { for: "dev-port" }, "Port"), port,
        h("label", { for: "dev-description" }, "Description"), description,
        h("label", { for: "dev-credential" }, "Credential"), cred,
        h("label", { for: "dev-fingerprint" }, "Certificate"), h("div", null, fingerprint, " ", fetchFp, seen),
        h("label", { for: "dev-ca-file" }, "CA file"), caFile,
        h("label", { for: "dev-insecure" }, "Plain HTTP"), h("div", null, insecure, " ",
          h("span", { class: "muted" }, "accept plain HTTP beyond loopback (token and data in clear)")),
      ),
      h("button", { type: "submit", class: "primary", id: "dev-save" }, d ? "Save" : "Add device"), " ",
      d ? h("button", { type: "button", onclick: () => deviceForm(null) }, "Cancel") : null,
    );
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      msg.clear();
      const body: Record<string, unknown> = {
        name: name.value.trim(), kind: kind.value, site: site.value ? Number(site.value) : null,
        hostname: hostname.value.trim(), port: Number(port.value), description: description.value,
        credential_ref: cred.value.trim() || null,
        tls_fingerprint: fingerprint.value.trim() || null, ca_file: caFile.value.trim() || null,
        insecure: insecure.checked,
      };
      try {
        if (d) await put(`/devices/${d.id}`, { ...body, version: d.version });
        else await post("/devices", body);
        deviceForm(null);
        await load();
      } catch (e) {
        msg.error(errorText(e));
      }
    });
    replace(formBox, form);
  }

  async function load(): Promise<void> {
    let devices: Device[];
    try {
      [devices, sites] = await Promise.all([
        get<unknown>("/devices").then((d) => asList<Device>(d, "devices")),
        get<unknown>("/sites").then((d) => asList<Site>(d, "sites")).catch(() => [] as Site[]),
      ]);
    } catch (e) {
      replace(table, h("div", { class: "msg error", role: "alert" }, errorText(e)));
      return;
    }
    replace(table, devices.length === 0 ? h("p", { class: "muted" }, "No devices registered.") :
      h("table", { class: "data" },
        h("thead", null, h("tr", null, ["Name", "Kind", "Site", "Address", "Status", "Last seen", "Capabilities", ""].map((t) => h("th", null, t)))),
        h("tbody", null, devices.map((d) => h("tr", { "data-device": d.id },
          h("td", null, h("strong", null, d.name), d.description ? h("div", { class: "muted" }, d.description) : null),
          h("td", null, d.kind),
          h("td", null, siteName(d.site)),
          h("td", null, h("code", null, `${d.hostname}:${d.port}`), " ", transportBadge(d)),
          h("td", null, h("span", { class: `status ${d.status}` }, d.status)),
          h("td", null, fmtTime(d.last_seen_unix_s)),
          h("td", { class: "caps" }, capsSummary(d)),
          h("td", null, admin ? [
            h("button", { type: "button", class: "link", onclick: () => deviceForm(d) }, "edit"), " ",
            h("button", { type: "button", class: "link", "data-action": "refresh", onclick: async () => {
              msg.clear();
              try {
                await post(`/devices/${d.id}/refresh`, {});
                msg.info(`Capabilities of ${d.name} refreshed.`);
                await load();
              } catch (e) {
                msg.error(errorText(e));
              }
            } }, "refresh"), " ",
            h("button", { type: "button", class: "link danger", onclick: async () => {
              if (!confirm(`Delete device ${d.name}?`)) return;
              try {
                await del(`/devices/${d.id}`);
                await load();
              } catch (e) {
                msg.error(errorText(e));
              }
            } }, "delete"),
          ] : null),
        )))));
    renderSites();
  }

  function renderSites(): void {
    const name = h("input", { id: "site-name", required: true, placeholder: "name" });
    const description = h("input", { id: "site-description", placeholder: "description" });
    const form = h("form", { class: "inline", id: "site-form" }, name, description, h("button", { type: "submit" }, "Add site"));
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      try {
        await post("/sites", { name: name.value.trim(), description: description.value });
        await load();
      } catch (e) {
        msg.error(errorText(e));
      }
    });
    replace(siteBox,
      sites.length ? h("ul", null, sites.map((s) => h("li", null, h("strong", null, s.name), s.description ? ` — ${s.description}` : "",
        admin ? [" ", h("button", { type: "button", class: "link danger", onclick: async () => {
          try {
            await del(`/sites/${s.id}`);
            await load();
          } catch (e) {
            msg.error(errorText(e));
          }
        } }, "delete")] : null))) : h("p", { class: "muted" }, "No sites."),
      admin ? form : null);
  }

  await load();
  if (admin) deviceForm(null);
}

// How the manager reaches the device: HTTPS (pinned or CA-verified), plain
// HTTP on loopback, or plain HTTP beyond it, which an admin allowed.
function transportBadge(d: Device): HTMLElement {
  if (d.tls_fingerprint) return h("span", { class: "transport tls", title: `HTTPS, certificate pinned: SHA-256 ${d.tls_fingerprint}` }, "https · pinned");
  if (d.ca_file) return h("span", { class: "transport tls", title: `HTTPS, certificate checked against ${d.ca_file}` }, "https · CA");
  if (d.insecure) return h("span", { class: "transport insecure", "data-insecure": "", title: "Plain HTTP beyond loopback: the device's token and data cross the network in clear. Pin its certificate to fix this." }, "⚠ insecure");
  return h("span", { class: "transport", title: "Plain HTTP on loopback" }, "http · local");
}

function capsSummary(d: Device): string {
  if (!d.capabilities) return "—";
  if (d.kind === "inline") return inlineSummary(d.capabilities as InlineCapabilities);
  const c = d.capabilities as Capabilities;
  const parts: string[] = [];
  if (c.interfaces?.length) {
    const named = c.interfaces.map((i) => (i.link_type ? `${i.name} (${i.link_type.name})` : i.name));
    parts.push(`interfaces ${named.join(", ")}`);
  }
  if (c.keys?.length) parts.push(`keys ${c.keys.join(", ")}`);
  if (c.policy?.max_snaplen) parts.push(`snaplen ≤ ${c.policy.max_snaplen}`);
  if (c.policy?.header_only_forced) parts.push("header-only");
  if (typeof c.sessions === "number") parts.push(`${c.sessions}/${c.max_sessions ?? "?"} sessions`);
  return parts.join(" · ") || "reported";
}

function inlineSummary(c: InlineCapabilities): string {
  const parts = [`in-line ${c.roles?.join("/") ?? "agent"}${c.interface ? ` on ${c.interface}` : ""}`];
  const read = (c.keys ?? []).filter((k) => k.used !== false).map((k) => k.key);
  if (read.length) parts.push(`settings ${read.join(", ")}`);
  if (c.streams?.length) parts.push(`streams ${c.streams.join(", ")}`);
  return parts.join(" · ");
}

// The configuration form: GIMS capture fields for a capture daemon, the
// agent's settings (inlinesettings.ts) for an in-line agent. Create, load,
// edit, copy, with validation errors (the form's own checks, then the
// API's 400 invalid_config) beside their fields and edit conflicts (409)
// shown with a choice instead of being lost.

import { get, post, put, asList, errorText, ApiError } from "../api";
import { h, Message, replace } from "../dom";
import { navigate } from "../nav";
import { clearFieldErrors, showFieldErrors } from "../fielderrors";
import { InlineSettingsForm, isInline, roleOf } from "../inlinesettings";
import type { Capabilities, CaptureConfig, Device, Experiment, InlineCapabilities, InlineSettings, Output, PageCtx, SessionConfig, Site } from "../types";

type Input = HTMLInputElement | HTMLSelectElement;

function field(label: string, path: string, input: Input | HTMLElement, hint?: string): HTMLElement {
  const id = input.id;
  return h("div", { class: "field", "data-path": path }, h("label", { for: id }, label), input, hint ? h("small", { class: "hint" }, hint) : null);
}

function text(id: string, placeholder = ""): HTMLInputElement {
  return h("input", { id, name: id, placeholder });
}

function num(id: string, placeholder = "", step = "1"): HTMLInputElement {
  return h("input", { id, name: id, type: "number", min: "0", step, placeholder });
}

function select(id: string, options: [string, string][]): HTMLSelectElement {
  return h("select", { id, name: id }, options.map(([v, l]) => h("option", { value: v }, l)));
}

function checkbox(id: string): HTMLInputElement {
  return h("input", { id, name: id, type: "checkbox" });
}

const numOrUndef = (i: HTMLInputElement): number | undefined => (i.value.trim() === "" ? undefined : Number(i.value));
const strOrUndef = (i: HTMLInputElement): string | undefined => (i.value.trim() === "" ? undefined : i.value.trim());
const setVal = (i: Input, v: unknown): void => {
  i.value = v === undefined || v === null ? "" : String(v);
};

export async function configPage({ app, params }: PageCtx): Promise<void> {
  const isNew = location.pathname.endsWith("/configs/new");
  let cfg: CaptureConfig | null = null;
  let expId: number;
  try {
    if (isNew) {
      expId = Number(params[0]);
    } else {
      cfg = await get<CaptureConfig>(`/configs/${params[0]}`);
      expId = cfg.experiment;
    }
  } catch (e) {
    app.append(h("h1", null, "Configuration"), h("div", { class: "msg error", role: "alert" }, errorText(e)));
    return;
  }
  const [exp, devs, sites, saved] = await Promise.all([
    get<Experiment>(`/experiments/${expId}`),
    get<unknown>("/devices").then((d) => asList<Device>(d, "devices")).catch(() => [] as Device[]),
    get<unknown>("/sites").then((d) => asList<Site>(d, "sites")).catch(() => [] as Site[]),
    get<unknown>(`/experiments/${expId}/configs`).then((d) => asList<CaptureConfig>(d, "configs")).catch(() => [] as CaptureConfig[]),
  ]);
  const usable = devs.filter((d) => d.kind === "capture" || d.kind === "inline");
  const inline = new InlineSettingsForm();
  const msg = new Message();
  const conflict = h("div", { id: "conflict", class: "msg warn", role: "alert", hidden: true });
  const unplaced = h("ul", { class: "field-errors-other", id: "other-errors" });

  // Identification
  const name = text("cfg-name", "east-http");
  const site = select("cfg-site", [["", "any site"], ...sites.map((s): [string, string] => [String(s.id), s.name])]);
  const device = h("select", { id: "cfg-device", name: "cfg-device" });
  const caps = h("div", { class: "caps", id: "cfg-caps" });
  // Storage
  const storageType = select("cfg-storage", [["local", "local (on the device)"], ["sftp", "SFTP archive"], ["s3", "S3 archive"]]);
  const storageTarget = text("cfg-storage-target", "archive target name of the device");
  const rollSeconds = num("cfg-roll-seconds", "e.g. 300");
  const rollBytes = num("cfg-roll-bytes", "e.g. 100000000");
  const quotaBytes = num("cfg-quota-bytes", "none");
  const quotaPolicy = select("cfg-quota-policy", [["stop", "stop writing"], ["delete_oldest", "delete the oldest files"]]);
  // Capture
  const iface = h("select", { id: "cfg-interface", name: "cfg-interface" });
  const snaplen = num("cfg-snaplen", "65535");
  const headerOnly = checkbox("cfg-header-only");
  const format = select("cfg-format", [["pcapng", "pcapng"], ["pcap", "pcap"], ["", "no packet files"]]);
  const countersOut = checkbox("cfg-counters");
  const counterInterval = num("cfg-counter-interval", "10");
  // Filters
  const vlan = num("cfg-vlan", "42");
  const host = text("cfg-host", "10.0.0.1 or 10.0.0.0/8");
  const src = text("cfg-src", "address or prefix");
  const dst = text("cfg-dst", "address or prefix");
  const port = num("cfg-port", "80");
  const srcPort = num("cfg-src-port");
  const dstPort = num("cfg-dst-port");
  const proto = h("input", { id: "cfg-proto", name: "cfg-proto", list: "protos", placeholder: "tcp, udp, icmp or a number" });
  const protos = h("datalist", { id: "protos" }, ["tcp", "udp", "icmp"].map((p) => h("option", { value: p })));
  const filter = text("cfg-filter", "libpcap expression, and-ed with the fields above");
  // Sampling
  const sMode = select("cfg-sampling", [["all", "every packet"], ["one_in_n", "1 in n"], ["probability", "probability p"], ["flow", "whole flows with probability p"]]);
  const sN = num("cfg-sampling-n", "n");
  const sP = num("cfg-sampling-p", "0.1", "any");
  const sSeed = num("cfg-sampling-seed", "seed");
  // Aggregation
  const ipfix = checkbox("cfg-ipfix");
  const ipfixTransport = select("cfg-ipfix-transport", [["udp", "UDP"], ["tcp", "TCP"], ["file", "file on the device"]]);
  const ipfixTarget = text("cfg-ipfix-target", "collector HOST:PORT or file name");
  const ipfixIdle = num("cfg-ipfix-idle", "15");
  const ipfixActive = num("cfg-ipfix-active", "60");
  const ipfixBiflow = checkbox("cfg-ipfix-biflow");
  // Anonymisation
  const anonKey = h("select", { id: "cfg-anon-key", name: "cfg-anon-key" });
  const anonFields = select("cfg-anon-fields", [["both", "both addresses"], ["src", "source only"], ["dst", "destination only"]]);
  // Metadata
  const metaRows = h("div", { id: "cfg-metadata", class: "meta-rows" });

  const addMeta = (k = "", v = ""): void => {
    const row = h("div", { class: "meta-row" },
      h("input", { class: "meta-key", placeholder: "key", value: k, "aria-label": "metadata key" }),
      h("input", { class: "meta-value", placeholder: "value", value: v, "aria-label": "metadata value" }),
      h("button", { type: "button", class: "link", onclick: () => row.remove() }, "remove"),
    );
    metaRows.append(row);
  };

  const chosenDevice = (): Device | undefined => usable.find((d) => d.id === Number(device.value));
  const deviceLabel = (d: Device): string =>
    `${d.name} (${d.kind === "inline" ? `in-line ${roleOf(d)}, ` : ""}${d.hostname}:${d.port}, ${d.status})`;

  const fillDevices = (keep?: number): void => {
    const wanted = keep ?? Number(device.value);
    const list = usable.filter((d) => !site.value || String(d.site) === site.value);
    replace(device, h("option", { value: "" }, list.length ? "choose a device" : "no capture device or in-line agent at this site"),
      list.map((d) => h("option", { value: d.id, "data-kind": d.kind }, deviceLabel(d))));
    if (list.some((d) => d.id === wanted)) device.value = String(wanted);
    fillCaps();
  };

  const fillCaps = (iv?: string, key?: string): void => {
    const d = chosenDevice();
    showKind(d);
    if (isInline(d)) {
      inline.setDevice(d);
      const ic = (d?.capabilities ?? {}) as InlineCapabilities;
      replace(caps, h("small", { class: "hint" },
        `In-line ${roleOf(d)} on ${ic.interface ?? "an unknown interface"}`,
        ` · ${(ic.keys ?? []).filter((k) => k.used !== false && k.key !== "enabled").length} setting(s) it reads`,
        ic.streams?.length ? ` · streams ${ic.streams.join(", ")}` : " · no stream (started without --collect)"));
      return;
    }
    const c = (d?.capabilities ?? {}) as Capabilities;
    const ifaces = (c.interfaces ?? []).map((i) => i.name);
    const wantIf = iv ?? iface.value;
    replace(iface, h("option", { value: "" }, "the device's only interface"), ifaces.map((i) => h("option", { value: i }, i)));
    if (wantIf && !ifaces.includes(wantIf)) iface.append(h("option", { value: wantIf }, `${wantIf} (not reported by the device)`));
    iface.value = wantIf ?? "";
    const wantKey = key ?? anonKey.value;
    const keys = c.keys ?? [];
    replace(anonKey, h("option", { value: "" }, "no anonymisation"), keys.map((k) => h("option", { value: k }, k)));
    if (wantKey && !keys.includes(wantKey)) anonKey.append(h("option", { value: wantKey }, `${wantKey} (not known by the device)`));
    anonKey.value = wantKey ?? "";
    const p = c.policy ?? {};
    replace(caps, d
      ? h("small", { class: "hint" },
          `Device policy: snap length ≤ ${p.max_snaplen ?? "65535"}`,
          p.header_only_forced ? " · header-only forced" : "",
          p.anonymization_mandatory ? " · anonymisation mandatory" : "",
          ` · ${ifaces.length} interface(s), ${keys.length} key(s)`)
      : null);
  };

  /** Shows the capture fields or the agent's settings, as the device is. */
  const showKind = (d: Device | undefined): void => {
    const agent = isInline(d);
    for (const fs of form.querySelectorAll<HTMLElement>("fieldset.capture-only")) fs.hidden = agent;
    inline.el.hidden = !agent;
    form.dataset.kind = agent ? "inline" : "capture";
  };

  site.addEventListener("change", () => fillDevices());
  device.addEventListener("change", () => fillCaps());

  const sync = (): void => {
    sN.closest(".field")!.toggleAttribute("hidden", sMode.value !== "one_in_n");
    const usesP = sMode.value === "probability" || sMode.value === "flow";
    sP.closest(".field")!.toggleAttribute("hidden", !usesP);
    sSeed.closest(".field")!.toggleAttribute("hidden", !usesP);
    for (const i of [ipfixTransport, ipfixTarget, ipfixIdle, ipfixActive, ipfixBiflow]) i.closest(".field")!.toggleAttribute("hidden", !ipfix.checked);
    storageTarget.closest(".field")!.toggleAttribute("hidden", storageType.value === "local");
    anonFields.closest(".field")!.toggleAttribute("hidden", anonKey.value === "");
  };
  for (const i of [sMode, ipfix, storageType, anonKey]) i.addEventListener("change", sync);

  const metadataOf = (): Record<string, string> => {
    const metadata: Record<string, string> = {};
    for (const row of metaRows.querySelectorAll(".meta-row")) {
      const k = row.querySelector<HTMLInputElement>(".meta-key")!.value.trim();
      const v = row.querySelector<HTMLInputElement>(".meta-value")!.value;
      if (k) metadata[k] = v;
    }
    return metadata;
  };

  function toConfig(): Omit<CaptureConfig, "id" | "experiment" | "version"> {
    if (isInline(chosenDevice())) {
      return { name: name.value.trim(), device: Number(device.value), storage: { type: "local" }, session: inline.read(), metadata: metadataOf() };
    }
    const session: SessionConfig = {};
    if (iface.value) session.interface = iface.value;
    const f = strOrUndef(filter);
    if (f) session.filter = f;
    const sc: Record<string, unknown> = {};
    const scv: [string, unknown][] = [
      ["vlan", numOrUndef(vlan)], ["host", strOrUndef(host)], ["src", strOrUndef(src)], ["dst", strOrUndef(dst)],
      ["port", numOrUndef(port)], ["src_port", numOrUndef(srcPort)], ["dst_port", numOrUndef(dstPort)],
    ];
    const pv = proto.value.trim();
    if (pv) scv.push(["proto", /^\d+$/.test(pv) ? Number(pv) : pv]);
    for (const [k, v] of scv) if (v !== undefined) sc[k] = v;
    if (Object.keys(sc).length) session.shortcuts = sc;
    const sl = numOrUndef(snaplen);
    if (sl !== undefined) session.snaplen = sl;
    if (headerOnly.checked) session.header_only = true;
    if (sMode.value !== "all") {
      const s: NonNullable<SessionConfig["sampling"]> = { mode: sMode.value as "one_in_n" | "probability" | "flow" };
      if (sMode.value === "one_in_n") s.n = numOrUndef(sN);
      else {
        s.p = numOrUndef(sP);
        const seed = numOrUndef(sSeed);
        if (seed !== undefined) s.seed = seed;
      }
      session.sampling = s;
    }
    if (anonKey.value) session.anonymization = { key: anonKey.value, fields: anonFields.value as "both" | "src" | "dst" };
    const outputs: Output[] = [];
    if (format.value) outputs.push({ type: format.value as "pcap" | "pcapng" });
    if (countersOut.checked) outputs.push({ type: "counters" });
    if (ipfix.checked) {
      const t = ipfixTransport.value as "udp" | "tcp" | "file";
      const target: NonNullable<Output["target"]> = { transport: t };
      if (t === "file") target.path = ipfixTarget.value.trim();
      else target.collector = ipfixTarget.value.trim();
      const flows: NonNullable<Output["flows"]> = {};
      const idle = numOrUndef(ipfixIdle);
      const active = numOrUndef(ipfixActive);
      if (idle !== undefined) flows.idle_timeout_s = idle;
      if (active !== undefined) flows.active_timeout_s = active;
      if (ipfixBiflow.checked) flows.biflow = true;
      outputs.push({ type: "ipfix", target, flows });
    }
    if (outputs.length) session.outputs = outputs;
    const rs = numOrUndef(rollSeconds);
    const rb = numOrUndef(rollBytes);
    if (rs !== undefined || rb !== undefined) {
      session.rollover = {};
      if (rs !== undefined) session.rollover.seconds = rs;
      if (rb !== undefined) session.rollover.bytes = rb;
    }
    const qb = numOrUndef(quotaBytes);
    if (qb !== undefined) session.quota = { bytes: qb, policy: quotaPolicy.value as "stop" | "delete_oldest" };
    const ci = numOrUndef(counterInterval);
    if (ci !== undefined) session.counter_interval_s = ci;
    const metadata = metadataOf();
    const storage: CaptureConfig["storage"] = { type: storageType.value as "local" | "sftp" | "s3" };
    if (storageType.value !== "local") storage.target = storageTarget.value.trim();
    return { name: name.value.trim(), device: Number(device.value) || 0, storage, session, metadata };
  }

  function fromConfig(c: Pick<CaptureConfig, "name" | "device" | "storage" | "session" | "metadata">, keepName = false): void {
    if (!keepName) name.value = c.name;
    const dev = usable.find((d) => d.id === c.device);
    site.value = dev && dev.site !== null && sites.some((s) => s.id === dev.site) ? String(dev.site) : "";
    fillDevices(c.device);
    replace(metaRows);
    for (const [k, v] of Object.entries(c.metadata ?? {})) addMeta(k, String(v));
    if (isInline(dev)) {
      inline.fill((c.session ?? {}) as InlineSettings);
      return;
    }
    const s = (c.session ?? {}) as SessionConfig;
    fillCaps(s.interface ?? "", s.anonymization?.key ?? "");
    storageType.value = c.storage?.type ?? "local";
    setVal(storageTarget, c.storage?.target);
    setVal(rollSeconds, s.rollover?.seconds);
    setVal(rollBytes, s.rollover?.bytes);
    setVal(quotaBytes, s.quota?.bytes);
    quotaPolicy.value = s.quota?.policy ?? "stop";
    setVal(snaplen, s.snaplen);
    headerOnly.checked = Boolean(s.header_only);
    const outs = s.outputs ?? [];
    format.value = outs.find((o) => o.type === "pcap" || o.type === "pcapng")?.type ?? "";
    countersOut.checked = outs.some((o) => o.type === "counters");
    const ix = outs.find((o) => o.type === "ipfix");
    ipfix.checked = Boolean(ix);
    ipfixTransport.value = ix?.target?.transport ?? "udp";
    setVal(ipfixTarget, ix?.target?.path ?? ix?.target?.collector);
    setVal(ipfixIdle, ix?.flows?.idle_timeout_s);
    setVal(ipfixActive, ix?.flows?.active_timeout_s);
    ipfixBiflow.checked = Boolean(ix?.flows?.biflow);
    setVal(counterInterval, s.counter_interval_s);
    const sc = s.shortcuts ?? {};
    setVal(vlan, sc.vlan);
    setVal(host, sc.host);
    setVal(src, sc.src);
    setVal(dst, sc.dst);
    setVal(port, sc.port);
    setVal(srcPort, sc.src_port);
    setVal(dstPort, sc.dst_port);
    setVal(proto, sc.proto);
    setVal(filter, s.filter);
    sMode.value = s.sampling?.mode ?? "all";
    setVal(sN, s.sampling?.n);
    setVal(sP, s.sampling?.p);
    setVal(sSeed, s.sampling?.seed);
    anonFields.value = s.anonymization?.fields ?? "both";
    sync();
  }

  const form = h("form", { id: "config-form", class: "config", novalidate: true },
    h("fieldset", null, h("legend", null, "Identification"),
      h("div", { class: "field" }, h("label", null, "Experiment"), h("output", { id: "cfg-experiment" }, `${exp.name} (${exp.domain})`)),
      field("Configuration name", "name", name),
      field("Site", "site", site),
      field("Device", "device", device),
      caps,
    ),
    h("fieldset", { class: "capture-only" }, h("legend", null, "Storage"),
      field("Storage", "storage.type", storageType),
      field("Archive target", "storage.target", storageTarget),
      field("Rollover after seconds", "session.rollover.seconds", rollSeconds),
      field("Rollover after bytes", "session.rollover.bytes", rollBytes),
      field("Quota (bytes)", "session.quota.bytes", quotaBytes),
      field("When the quota is reached", "session.quota.policy", quotaPolicy),
    ),
    h("fieldset", { class: "capture-only" }, h("legend", null, "Capture"),
      field("Interface", "session.interface", iface),
      field("Snap length (bytes)", "session.snaplen", snaplen),
      field("Headers only", "session.header_only", headerOnly, "keep L2–L4 headers, cut the payload"),
      field("Packet files", "session.outputs", format),
      field("Counters output", "session.outputs.counters", countersOut),
      field("Counter interval (s)", "session.counter_interval_s", counterInterval),
    ),
    h("fieldset", { class: "capture-only" }, h("legend", null, "Filters"),
      field("VLAN", "session.shortcuts.vlan", vlan),
      field("Host", "session.shortcuts.host", host),
      field("Source address", "session.shortcuts.src", src),
      field("Destination address", "session.shortcuts.dst", dst),
      field("Port", "session.shortcuts.port", port),
      field("Source port", "session.shortcuts.src_port", srcPort),
      field("Destination port", "session.shortcuts.dst_port", dstPort),
      field("Protocol", "session.shortcuts.proto", proto), protos,
      field("libpcap expression", "session.filter", filter),
    ),
    h("fieldset", { class: "capture-only" }, h("legend", null, "Sampling"),
      field("Mode", "session.sampling.mode", sMode),
      field("n", "session.sampling.n", sN),
      field("p", "session.sampling.p", sP),
      field("Seed", "session.sampling.seed", sSeed),
    ),
    h("fieldset", { class: "capture-only", "data-path": "session.outputs.ipfix" }, h("legend", null, "Aggregation"),
      field("IPFIX flows output", "session.outputs.ipfix.enabled", ipfix),
      field("Transport", "session.outputs.ipfix.target.transport", ipfixTransport),
      field("Collector or file", "session.outputs.ipfix.target", ipfixTarget),
      field("Idle timeout (s)", "session.outputs.ipfix.flows.idle_timeout_s", ipfixIdle),
      field("Active timeout (s)", "session.outputs.ipfix.flows.active_timeout_s", ipfixActive),
      field("Biflows", "session.outputs.ipfix.flows.biflow", ipfixBiflow),
    ),
    h("fieldset", { class: "capture-only" }, h("legend", null, "Anonymisation"),
      field("Key", "session.anonymization.key", anonKey),
      field("Addresses", "session.anonymization.fields", anonFields),
    ),
    h("fieldset", { "data-path": "metadata" }, h("legend", null, "User metadata"),
      metaRows,
      h("button", { type: "button", class: "link", id: "cfg-meta-add", onclick: () => addMeta() }, "add a key"),
    ),
    inline.el,
    unplaced,
    h("div", { class: "buttons" },
      h("button", { type: "submit", class: "primary", id: "cfg-save" }, "Save"),
      cfg ? h("button", { type: "button", id: "cfg-copy", onclick: () => void copy() }, "Copy…") : null,
      h("a", { href: `/experiments/${expId}` }, "back to the experiment"),
    ),
  );

  const loadSel = h("select", { id: "cfg-load" }, h("option", { value: "" }, "fill the form from a saved configuration…"),
    saved.filter((c) => c.id !== cfg?.id).map((c) => h("option", { value: c.id }, c.name)));
  loadSel.addEventListener("change", () => {
    const src = saved.find((c) => c.id === Number(loadSel.value));
    if (src) fromConfig(src, true);
    loadSel.value = "";
  });

  const version = h("span", { id: "cfg-version" });
  const title = h("span", { id: "cfg-title" });
  const showVersion = (): void => {
    title.textContent = cfg ? `Configuration ${cfg.name}` : "New configuration";
    version.textContent = cfg ? `version ${cfg.version}` : "not saved yet";
  };

  async function save(overwriteVersion?: number): Promise<void> {
    msg.clear();
    conflict.hidden = true;
    clearFieldErrors(form);
    replace(unplaced);
    const body = toConfig();
    const own = isInline(chosenDevice()) ? inline.check() : {};
    if (Object.keys(own).length) {
      showFieldErrors(form, own);
      msg.error("Not saved: correct the fields marked.");
      return;
    }
    try {
      if (cfg) {
        cfg = await put<CaptureConfig>(`/configs/${cfg.id}`, { ...body, version: overwriteVersion ?? cfg.version });
        msg.info(`Saved (version ${cfg.version}).`);
      } else {
        cfg = await post<CaptureConfig>(`/experiments/${expId}/configs`, body);
        history.replaceState(null, "", `/configs/${cfg.id}`);
        msg.info(`Saved as ${cfg.name} (version ${cfg.version}).`);
      }
      showVersion();
    } catch (e) {
      if (e instanceof ApiError && e.code === "invalid_config" && e.details && typeof e.details["fields"] === "object") {
        const rest = showFieldErrors(form, e.details["fields"] as Record<string, unknown>);
        replace(unplaced, rest.map(([p, m]) => h("li", { class: "field-error", "data-error-for": p }, `${p}: ${m}`)));
        msg.error(e.message);
      } else if (e instanceof ApiError && e.code === "edit_conflict") {
        const current = (e.details?.["current"] ?? null) as CaptureConfig | null;
        showConflict(e.message, current);
      } else {
        msg.error(errorText(e));
      }
    }
  }

  function showConflict(message: string, current: CaptureConfig | null): void {
    replace(conflict,
      h("strong", null, "Not saved: this configuration was changed meanwhile. "),
      message,
      current ? ` The stored one is version ${current.version}; your edits were made on version ${cfg?.version}.` : "",
      h("div", { class: "buttons" },
        current ? h("button", { type: "button", id: "conflict-load", onclick: () => {
          cfg = current;
          fromConfig(current);
          showVersion();
          conflict.hidden = true;
          msg.info(`Loaded version ${current.version}: your edits were discarded.`);
        } }, "Load the stored version (discard my edits)") : null,
        current ? h("button", { type: "button", id: "conflict-overwrite", onclick: () => void save(current.version) }, "Overwrite it with mine") : null,
      ),
    );
    conflict.hidden = false;
    conflict.scrollIntoView({ block: "center" });
  }

  async function copy(): Promise<void> {
    if (!cfg) return;
    const n = prompt(`Name of the copy of ${cfg.name}`, `${cfg.name}-copy`);
    if (!n) return;
    try {
      const c = await post<CaptureConfig>(`/configs/${cfg.id}/copy`, { name: n });
      navigate(`/configs/${c.id}`);
    } catch (e) {
      msg.error(errorText(e));
    }
  }

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void save();
  });

  app.append(
    h("p", { class: "crumbs" }, h("a", { href: "/experiments" }, "Experiments"), " / ", h("a", { href: `/experiments/${expId}` }, exp.name), " / ", cfg ? cfg.name : "new configuration"),
    h("h1", null, title, " ", h("small", null, version)),
    h("p", { hidden: saved.length === 0 }, loadSel),
    conflict,
    msg.el,
    form,
  );
  if (cfg) fromConfig(cfg);
  else {
    fillDevices(usable.length === 1 ? usable[0]!.id : undefined);
    format.value = "pcapng";
    sync();
  }
  showVersion();
}

// The settings of an in-line agent in a configuration (spec/manager-api.md,
// *Capture configuration*: `session` holds the agent's settings): one field
// per key the agent lists in its capabilities (mode as a choice of its
// modes, sample 1-in-N, filters, option types, rate limits), keys its role
// does not read shown disabled, and free `key=value` lines for anything
// else so a saved configuration never loses a key on load. Empty fields
// are not sent: the agent keeps its value. The values are checked here as
// far as that is cheap (the agent's own syntax, spec/inline-control.md);
// the manager checks again against the capabilities and the agent parses
// them when a run applies them.

import { h, replace } from "./dom";
import type { Device, InlineCapabilities, InlineSettings } from "./types";

/** Runs switch this one (start/resume on, pause/stop off): never configured. */
const RUN_KEYS = new Set(["enabled"]);

const PORT = /^(any|\*|0|([1-9]\d{0,4}))$/;

/** Client-side checks of a value's text by key; a message when it is wrong. */
const CHECKS: Record<string, (v: string, caps: InlineCapabilities) => string | null> = {
  sample: (v) => (/^\d+$/.test(v) && Number(v) >= 1 && Number(v) <= 4294967295 ? null : `${JSON.stringify(v)}: give an integer >= 1 (one packet in N)`),
  sport: (v) => (PORT.test(v) && Number(v === "any" || v === "*" ? 0 : v) <= 65535 ? null : "a port number 1-65535 or any"),
  dport: (v) => (PORT.test(v) && Number(v === "any" || v === "*" ? 0 : v) <= 65535 ? null : "a port number 1-65535 or any"),
  proto: (v) => (/^(any|\*|udp|tcp|icmpv6|icmp6)$/.test(v) || (/^\d{1,3}$/.test(v) && Number(v) <= 255) ? null : "udp, tcp, icmpv6, 1-255 or any"),
  src: (v) => (/^(any|\*|[0-9A-Fa-f:.]+(\/\d{1,3})?)$/.test(v) ? null : "ADDR[/LEN] or any"),
  dst: (v) => (/^(any|\*|[0-9A-Fa-f:.]+(\/\d{1,3})?)$/.test(v) ? null : "ADDR[/LEN] or any"),
  mode: (v, caps) => {
    const modes = caps.modes ?? ["delay", "loss", "both", "pdm"];
    return modes.includes(v) ? null : `${JSON.stringify(v)} is not one of ${modes.join(", ")}`;
  },
  delay_type: (v) => optionType(v),
  loss_type: (v) => optionType(v),
  min_interval_us: (v) => (/^\d+$/.test(v) ? null : "whole microseconds (0 = no limit)"),
  flow_timeout_s: (v) => (v.trim() !== "" && Number.isFinite(Number(v)) && Number(v) > 0 ? null : "positive seconds"),
};

function optionType(v: string): string | null {
  const n = /^0[xX][0-9A-Fa-f]{1,2}$/.test(v) ? parseInt(v.slice(2), 16) : /^\d{1,3}$/.test(v) ? Number(v) : NaN;
  return n >= 2 && n <= 255 ? null : "an option type 2-255 (0 and 1 are padding), decimal or 0x..";
}

export function isInline(d: Device | undefined): boolean {
  return d?.kind === "inline";
}

/** The agent's role (`source`, `sink`) from its capabilities. */
export function roleOf(d: Device | undefined): string {
  return (d?.capabilities as InlineCapabilities | null)?.roles?.[0] ?? "agent";
}

export class InlineSettingsForm {
  readonly el: HTMLFieldSetElement;
  private readonly box: HTMLElement;
  private readonly other: HTMLTextAreaElement;
  private caps: InlineCapabilities = {};
  private inputs = new Map<string, HTMLInputElement | HTMLSelectElement>();

  constructor() {
    this.box = h("div", { id: "inl-fields" });
    this.other = h("textarea", { id: "inl-other", name: "inl-other", rows: 2, placeholder: "key=value, one per line" });
    this.el = h("fieldset", { id: "inline-settings", hidden: true },
      h("legend", null, "In-line agent settings"),
      h("p", { class: "hint" }, "Fields left empty keep the agent's current value. A run switches instrumentation on at start and off at pause and stop."),
      this.box,
      h("div", { class: "field", "data-path": "session" },
        h("label", { for: "inl-other" }, "Other settings"), this.other,
        h("small", { class: "hint" }, "keys the agent did not list, as key=value lines")),
    );
  }

  /** Builds the fields for `d`'s capabilities, keeping the values typed so far. */
  setDevice(d: Device | undefined): void {
    const keep = this.read();
    this.caps = (d?.capabilities as InlineCapabilities | null) ?? {};
    this.inputs.clear();
    const keys = (this.caps.keys ?? []).filter((k) => !RUN_KEYS.has(k.key));
    const role = roleOf(d);
    replace(this.box, keys.length === 0
      ? h("p", { class: "muted", id: "inl-no-caps" }, "The agent's settings are not known yet: an admin refreshes the device's capabilities (Devices page). Meanwhile give them as key=value lines below.")
      : keys.map((k) => {
          const input = this.makeInput(k.key);
          input.disabled = k.used === false;
          this.inputs.set(k.key, input);
          const hint = k.used === false ? `the ${role} does not read it` : (k.help ?? "");
          return h("div", { class: "field", "data-path": `session.${k.key}` },
            h("label", { for: input.id }, k.key.replace(/_/g, " ")), input, hint ? h("small", { class: "hint" }, hint) : null);
        }));
    this.fill(keep);
  }

  private makeInput(key: string): HTMLInputElement | HTMLSelectElement {
    const id = `inl-${key}`;
    if (key === "mode") {
      const modes = this.caps.modes ?? ["delay", "loss", "both", "pdm"];
      return h("select", { id, name: id }, h("option", { value: "" }, "keep the agent's mode"), modes.map((m) => h("option", { value: m }, m)));
    }
    if (key === "sample") return h("input", { id, name: id, type: "number", min: "1", step: "1", placeholder: "N (1 = every packet)" });
    return h("input", { id, name: id, placeholder: "keep the agent's value" });
  }

  /** The settings to save: non-empty fields, then the other lines. */
  read(): InlineSettings {
    const out: InlineSettings = {};
    for (const [key, input] of this.inputs) {
      const v = input.value.trim();
      if (v !== "") out[key] = key === "sample" && /^\d+$/.test(v) ? Number(v) : v;
    }
    for (const [key, value] of this.otherLines()) if (key) out[key] = value;
    return out;
  }

  private otherLines(): [string, string][] {
    return this.other.value.split("\n").map((l) => l.trim()).filter(Boolean).map((l) => {
      const i = l.indexOf("=");
      return i < 0 ? [l, ""] : [l.slice(0, i).trim(), l.slice(i + 1).trim()];
    });
  }

  fill(s: InlineSettings): void {
    const rest: string[] = [];
    for (const input of this.inputs.values()) input.value = "";
    for (const [key, value] of Object.entries(s ?? {})) {
      const input = this.inputs.get(key);
      if (input) {
        if (input instanceof HTMLSelectElement && ![...input.options].some((o) => o.value === String(value))) {
          input.append(h("option", { value: String(value) }, `${String(value)} (not offered by the agent)`));
        }
        input.value = String(value);
        input.disabled = false;
      } else {
        rest.push(`${key}=${String(value)}`);
      }
    }
    this.other.value = rest.join("\n");
  }

  /** What is wrong before asking the manager: dotted path → message. */
  check(): Record<string, string> {
    const bad: Record<string, string> = {};
    const role = this.caps.roles?.[0] ?? "agent";
    for (const [key, input] of this.inputs) {
      const v = input.value.trim();
      if (v === "") continue;
      const used = this.caps.keys?.find((k) => k.key === key)?.used !== false;
      const msg = used ? CHECKS[key]?.(v, this.caps) ?? null : `the ${role} ignores ${key}; leave it empty`;
      if (msg) bad[`session.${key}`] = msg;
    }
    for (const [key, value] of this.otherLines()) {
      if (!key || !/^[A-Za-z0-9_]+$/.test(key)) bad["session"] = `${JSON.stringify(key)}: write key=value, one per line`;
      else if (RUN_KEYS.has(key)) bad[`session.${key}`] = "leave it out: runs switch instrumentation on (start, resume) and off (pause, stop)";
      else if (value === "") bad[`session.${key}`] = `give ${key} a value (key=value)`;
      else {
        const msg = CHECKS[key]?.(value, this.caps);
        if (msg) bad[`session.${key}`] = msg;
      }
    }
    return bad;
  }
}

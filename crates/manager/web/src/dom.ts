// A tiny helper to build DOM trees without a framework.

import { fmtInstant } from "./timefmt";

export type Child = Node | string | number | null | undefined | false | Child[];
type AttrValue = string | number | boolean | null | undefined | ((ev: Event) => void);
export type Attrs = Record<string, AttrValue>;

/** `h("button", {class: "x", onclick: f}, "text")`. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Attrs | null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue;
      if (typeof v === "function") {
        el.addEventListener(k.slice(2).toLowerCase(), v);
      } else if (k === "value" && "value" in el) {
        (el as HTMLInputElement).value = String(v);
      } else if (k === "checked" && el instanceof HTMLInputElement) {
        el.checked = Boolean(v);
      } else {
        el.setAttribute(k, v === true ? "" : String(v));
      }
    }
  }
  append(el, children);
  return el;
}

export function append(el: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

/** Replaces the children of `el`. */
export function replace(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}

/** A time as every table writes it (timefmt.ts: UTC, local or relative). */
export function fmtTime(unixS: number | null | undefined): string {
  return fmtInstant(unixS);
}

export function fmtBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let i = -1;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}

export function fmtNum(n: unknown): string {
  if (typeof n === "number") return n.toLocaleString("en-US");
  if (n === null || n === undefined) return "—";
  return String(n);
}

/** A status message line (error or notice) that can be set and cleared. */
export class Message {
  readonly el: HTMLDivElement;
  constructor() {
    this.el = h("div", { class: "msg", role: "alert", hidden: true });
  }
  error(text: string): void {
    this.set(text, "error");
  }
  info(text: string): void {
    this.set(text, "info");
  }
  clear(): void {
    this.el.hidden = true;
    this.el.textContent = "";
  }
  private set(text: string, kind: string): void {
    this.el.className = `msg ${kind}`;
    this.el.textContent = text;
    this.el.hidden = false;
  }
}

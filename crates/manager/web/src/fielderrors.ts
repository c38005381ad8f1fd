// Validation errors of 400 invalid_config (details.fields: dotted path →
// message) placed next to the form field whose data-path is the longest
// prefix of the error's path.

import { h } from "./dom";

/** `session.outputs[1].target` → `session.outputs.1.target`. */
export function normalisePath(p: string): string {
  return p.replace(/\[(\d+)\]/g, ".$1").replace(/^\./, "");
}

export function clearFieldErrors(form: HTMLElement): void {
  for (const e of form.querySelectorAll(".field-error")) e.remove();
  for (const e of form.querySelectorAll(".invalid")) e.classList.remove("invalid");
}

/** Shows each error beside its field; returns the ones no field matched. */
export function showFieldErrors(form: HTMLElement, fields: Record<string, unknown>): [string, string][] {
  const targets = [...form.querySelectorAll<HTMLElement>("[data-path]")];
  const unplaced: [string, string][] = [];
  let first: HTMLElement | null = null;
  for (const [rawPath, message] of Object.entries(fields)) {
    const path = normalisePath(rawPath);
    let best: HTMLElement | null = null;
    let bestLen = -1;
    for (const t of targets) {
      const p = t.dataset.path ?? "";
      if ((path === p || path.startsWith(p + ".")) && p.length > bestLen) {
        best = t;
        bestLen = p.length;
      }
    }
    const text = String(message);
    if (!best) {
      unplaced.push([rawPath, text]);
      continue;
    }
    best.classList.add("invalid");
    best.append(h("div", { class: "field-error", "data-error-for": rawPath, role: "alert" }, text));
    first ??= best;
  }
  first?.scrollIntoView({ block: "center" });
  first?.querySelector<HTMLElement>("input,select,textarea")?.focus();
  return unplaced;
}

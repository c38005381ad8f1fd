// The alerts banner: active monitor alerts (device down, dropping packets),
// polled while someone is logged in.

import { get, asList } from "./api";
import { h, replace, fmtTime } from "./dom";
import type { Alert } from "./types";

let timer: number | undefined;
const INTERVAL_MS = 10_000;

async function poll(): Promise<void> {
  const el = document.getElementById("alerts");
  if (!el) return;
  try {
    const alerts = asList<Alert>(await get<unknown>("/alerts"), "alerts");
    if (alerts.length === 0) {
      replace(el);
      el.className = "";
      return;
    }
    el.className = "alerts";
    replace(
      el,
      h(
        "ul",
        null,
        alerts.map((a) =>
          h("li", { class: `alert ${a.kind}` }, h("strong", null, a.kind === "down" ? "Device down" : "Dropping packets"), ` since ${fmtTime(a.since)}: ${a.message}`),
        ),
      ),
    );
  } catch {
    // no alerts shown when they cannot be read; pages show their own errors
  }
}

export function startAlerts(): void {
  if (timer !== undefined) return;
  void poll();
  timer = window.setInterval(() => void poll(), INTERVAL_MS);
}

export function stopAlerts(): void {
  if (timer !== undefined) window.clearInterval(timer);
  timer = undefined;
  const el = document.getElementById("alerts");
  if (el) replace(el);
}

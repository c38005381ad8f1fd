// Run control buttons (start, pause, resume, stop), shared by the
// experiment page and the results page.

import { post, errorText } from "./api";
import { h } from "./dom";
import type { Run } from "./types";

const ACTIONS: [string, string, (state: string) => boolean][] = [
  ["start", "Start", (s) => s === "created"],
  ["pause", "Pause", (s) => s === "running" || s === "partial"],
  ["resume", "Resume", (s) => s === "paused"],
  ["stop", "Stop", (s) => s === "running" || s === "paused" || s === "partial" || s === "created"],
];

/** Buttons for the actions the run's state allows; `done` gets the new run. */
export function runButtons(run: Run, done: (r: Run) => void, fail: (msg: string) => void): HTMLElement {
  const box = h("span", { class: "actions" });
  for (const [action, label, allowed] of ACTIONS) {
    if (!allowed(run.state)) continue;
    const b = h("button", { type: "button", class: `run-${action}`, "data-action": action }, label);
    b.addEventListener("click", async () => {
      for (const x of box.querySelectorAll("button")) x.disabled = true;
      try {
        const r = await post<Run>(`/runs/${run.id}/${action}`, {});
        done(r && typeof r === "object" && "state" in r ? r : { ...run });
      } catch (e) {
        fail(`${label} run ${run.id}: ${errorText(e)}`);
        for (const x of box.querySelectorAll("button")) x.disabled = false;
      }
    });
    box.append(b);
  }
  return box;
}

export function stateBadge(state: string): HTMLElement {
  return h("span", { class: `state ${state}`, "data-state": state }, state);
}

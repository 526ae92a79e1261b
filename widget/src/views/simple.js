// The small views: waiting for the host or the result, and a tool's error.

import { h } from "./dom.js";

/** A quiet placeholder with a status role, so screen readers hear what is awaited. */
export function renderWaiting(message) {
  return h(
    "section",
    { class: "waiting", role: "status", "aria-live": "polite" },
    h("span", { class: "waiting-dot", "aria-hidden": "true" }),
    h("p", { class: "waiting-text", text: message }),
  );
}

/** A tool result with `isError` (e.g. no gift fits): its own text, as an alert. */
export function renderToolError(message, title = "No suggestions this time") {
  return h(
    "section",
    { class: "tool-error-card", "aria-labelledby": "tool-error-title" },
    h("h2", { class: "view-title", id: "tool-error-title", text: title }),
    h("p", { class: "tool-error", role: "alert", text: message }),
  );
}

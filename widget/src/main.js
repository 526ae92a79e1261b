// Entry point: find the host, follow its look, and hand its events to the app.

import { connectHost } from "./bridge/connect.js";
import { createStateStore } from "./bridge/state-store.js";
import { createApp } from "./app.js";
import { startSizeReporting } from "./size-reporter.js";
import { createThemer } from "./theme.js";

const root = document.getElementById("app");
const darkQuery = window.matchMedia?.("(prefers-color-scheme: dark)");
const applyHostContext = createThemer(document, () => Boolean(darkQuery?.matches));
const app = createApp({ root });

applyHostContext({}); // the system theme until the host says otherwise

const stateStore = createStateStore([() => window.sessionStorage, () => window.localStorage]);

// Full screen already: the view offers no way into it (`.results-fullscreen` is hidden).
function followDisplayMode(context) {
  document.documentElement.dataset.displayMode = context?.displayMode === "fullscreen" ? "fullscreen" : "inline";
}

connectHost({ window, stateStore, onUndecided: () => app.waitForHost() }).then((host) => {
  document.documentElement.dataset.host = host.kind;
  applyHostContext(host.hostContext);
  followDisplayMode(host.hostContext);
  app.attach(host);

  host.on("host-context-changed", (context) => {
    applyHostContext(context);
    followDisplayMode(context);
  });
  host.on("tool-input", (args) => app.toolInput(args));
  host.on("tool-result", (result) => app.toolResult(result));
  host.on("tool-cancelled", (cancellation) => app.toolCancelled(cancellation));

  const stopSizeReporting =
    host.kind === "mcp-apps"
      ? startSizeReporting({ element: document.documentElement, report: (size) => host.reportSize(size) })
      : () => {};

  host.on("teardown", () => {
    app.teardown();
    stopSizeReporting();
  });

  // Without a host theme, follow the system's as it changes.
  darkQuery?.addEventListener?.("change", () => applyHostContext(host.hostContext));
});

// Which host is there: MCP Apps first, window.openai as the fallback, otherwise keep waiting.
//
// - Not in a frame: no MCP Apps host can be listening, so window.openai is used at once if
//   it exists; if not, wait for it to appear.
// - In a frame: ask with `ui/initialize`. If no answer came within `timeoutMs` and
//   window.openai exists, use it (an answer after that is ignored). If neither, keep waiting
//   for the MCP host's answer and for window.openai, and say so through `onUndecided`.

import { createMcpAppsHost } from "./mcp-apps.js";
import { createOpenAiHost } from "./openai.js";

export const HANDSHAKE_TIMEOUT_MS = 1500;

/**
 * @param {object} options
 * @param {Window} options.window
 * @param {{save: Function, load: Function}} options.stateStore state for the MCP Apps adapter
 * @param {number} [options.timeoutMs]
 * @param {{setTimeout: Function, clearTimeout: Function}} [options.timers]
 * @param {() => void} [options.onUndecided] no host yet: show a quiet waiting state
 * @returns {Promise<object>} the host adapter
 */
export function connectHost({ window, stateStore, timeoutMs = HANDSHAKE_TIMEOUT_MS, timers = window, onUndecided = () => {} }) {
  const hasOpenAi = () => typeof window.openai === "object" && window.openai !== null;
  const framed = window.parent != null && window.parent !== window;

  return new Promise((resolve) => {
    let decided = false;
    let mcp = null;
    let timer = null;
    let waitedLongEnough = !framed; // outside a frame there is nothing to wait for

    function decide(adapter) {
      if (decided) return;
      decided = true;
      if (timer !== null) timers.clearTimeout(timer);
      window.removeEventListener("openai:set_globals", onGlobals);
      resolve(adapter);
    }

    function fallBackToOpenAi() {
      if (decided || !waitedLongEnough || !hasOpenAi()) return false;
      mcp?.adapter.close(); // a late ui/initialize answer must not start a second bridge
      decide(createOpenAiHost({ window }));
      return true;
    }

    function onGlobals() {
      fallBackToOpenAi();
    }

    window.addEventListener("openai:set_globals", onGlobals);

    if (!framed) {
      if (!fallBackToOpenAi()) onUndecided();
      return;
    }

    mcp = createMcpAppsHost({ window, stateStore, timers });
    mcp.initialize().then(
      (adapter) => decide(adapter),
      () => {
        // The host refused the handshake: only window.openai can still help.
        waitedLongEnough = true;
        if (!fallBackToOpenAi()) onUndecided();
      },
    );
    timer = timers.setTimeout(() => {
      timer = null;
      waitedLongEnough = true;
      if (!fallBackToOpenAi()) onUndecided();
    }, timeoutMs);
  });
}

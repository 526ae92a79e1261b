// The MCP Apps host adapter (spec 2026-01-26): JSON-RPC 2.0 with window.parent.
//
// The view introduces itself with `ui/initialize`, confirms with `ui/notifications/initialized`,
// then hears the tool's input and result as notifications and reaches the server through the
// host with `tools/call` and `resources/read`. Only messages from window.parent count: any
// other frame could post look-alike messages.

import { createEmitter } from "./emitter.js";
import { RpcError, createRpcPeer } from "./rpc.js";
import { normaliseToolResult } from "./tool-result.js";

export const PROTOCOL_VERSION = "2026-01-26";
export const APP_INFO = Object.freeze({ name: "giftgenius-widget", version: "0.1.0" });

// A tool call the host never answers must not hang the widget (polling retries instead).
const TOOL_CALL_TIMEOUT_MS = 60000;
const RESOURCE_READ_TIMEOUT_MS = 60000;

/**
 * @param {object} options
 * @param {Window} options.window the view's window (its parent is the host)
 * @param {{save: Function, load: Function}} options.stateStore where job state is kept
 * @returns {{adapter: object, initialize: () => Promise<object>}}
 */
export function createMcpAppsHost({ window, stateStore, timers = window }) {
  const events = createEmitter();
  let hostContext = {};
  let hostCapabilities = {};
  let hostInfo = null;

  const peer = createRpcPeer({
    send: (message) => window.parent.postMessage(message, "*"),
    timers,
    onRequest(method, params) {
      if (method === "ping") return {};
      if (method === "ui/resource-teardown") {
        // Listeners stop every poll and timer synchronously, before the host hears back.
        events.emit("teardown", params ?? {});
        return {};
      }
      return undefined; // answered with -32601
    },
    onNotification(method, params) {
      switch (method) {
        case "ui/notifications/tool-input":
          events.emit("tool-input", params?.arguments ?? {});
          break;
        case "ui/notifications/tool-result":
          events.emit("tool-result", normaliseToolResult(params));
          break;
        case "ui/notifications/tool-cancelled":
          events.emit("tool-cancelled", { reason: typeof params?.reason === "string" ? params.reason : "" });
          break;
        case "ui/notifications/host-context-changed":
          // A partial context: merge it into what we have.
          hostContext = { ...hostContext, ...(params ?? {}) };
          events.emit("host-context-changed", hostContext);
          break;
        default:
          // tool-input-partial (never relied on) and anything newer: nothing to do.
          break;
      }
    },
  });

  function onMessage(event) {
    if (event.source !== window.parent) return;
    peer.receive(event.data);
  }
  window.addEventListener("message", onMessage);

  const adapter = {
    kind: "mcp-apps",
    get hostContext() {
      return hostContext;
    },
    get hostInfo() {
      return hostInfo;
    },
    get canReadResources() {
      return Boolean(hostCapabilities?.serverResources);
    },
    async callTool(name, args = {}, { timeoutMs = TOOL_CALL_TIMEOUT_MS } = {}) {
      const result = await peer.request("tools/call", { name, arguments: args }, { timeoutMs });
      return normaliseToolResult(result);
    },
    async readResource(uri) {
      if (!adapter.canReadResources) throw new RpcError({ message: "This host cannot read server resources" });
      return peer.request("resources/read", { uri }, { timeoutMs: RESOURCE_READ_TIMEOUT_MS });
    },
    async updateModelContext(text, structuredContent) {
      await peer.request("ui/update-model-context", {
        content: [{ type: "text", text }],
        structuredContent,
      });
    },
    saveState(state) {
      stateStore.save(state);
    },
    loadState(jobId) {
      return stateStore.load(jobId);
    },
    get canFullscreen() {
      const modes = hostContext?.availableDisplayModes;
      return Array.isArray(modes) && modes.includes("fullscreen");
    },
    async requestFullscreen() {
      await peer.request("ui/request-display-mode", { mode: "fullscreen" });
    },
    reportSize(size) {
      peer.notify("ui/notifications/size-changed", size);
    },
    on: events.on,
    close() {
      window.removeEventListener("message", onMessage);
      peer.close();
    },
  };

  async function initialize() {
    const result = await peer.request("ui/initialize", {
      protocolVersion: PROTOCOL_VERSION,
      appInfo: APP_INFO,
      appCapabilities: { availableDisplayModes: ["inline", "fullscreen"] },
    });
    hostContext = result?.hostContext ?? {};
    hostCapabilities = result?.hostCapabilities ?? {};
    hostInfo = result?.hostInfo ?? null;
    peer.notify("ui/notifications/initialized");
    return adapter;
  }

  return { adapter, initialize };
}

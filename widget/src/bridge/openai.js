// The fallback host adapter: ChatGPT's older Apps SDK bridge, `window.openai`.
//
// There the data are globals: `toolInput`, `toolOutput` (the tool's structuredContent),
// `theme`, `maxHeight`, `widgetState`; the host fires `openai:set_globals` on the window with
// the globals that changed in `event.detail.globals`. This adapter turns those into the same
// events the MCP Apps adapter emits, so one code path renders for both.

import { createEmitter } from "./emitter.js";
import { normaliseToolResult } from "./tool-result.js";

function isObject(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// The part of the globals that maps onto an MCP Apps host context.
function contextFrom(globals) {
  const context = {};
  if (globals.theme === "light" || globals.theme === "dark") context.theme = globals.theme;
  if (typeof globals.displayMode === "string") context.displayMode = globals.displayMode;
  if (typeof globals.locale === "string") context.locale = globals.locale;
  if (typeof globals.maxHeight === "number" && globals.maxHeight > 0) {
    context.containerDimensions = { maxHeight: globals.maxHeight };
  }
  return context;
}

export function createOpenAiHost({ window }) {
  const openai = window.openai;
  const events = createEmitter();
  let hostContext = contextFrom(openai);
  let saved = isObject(openai.widgetState) ? openai.widgetState : null;
  let lastOutput = null; // JSON of the last toolOutput emitted, to emit each one once

  function takeGlobals(globals) {
    const change = contextFrom(globals);
    if (Object.keys(change).length > 0) {
      hostContext = { ...hostContext, ...change };
      events.emit("host-context-changed", hostContext);
    }
    if (isObject(globals.widgetState)) saved = globals.widgetState;
    if (isObject(globals.toolInput)) events.emit("tool-input", globals.toolInput);
    if (globals.toolOutput != null) {
      const json = JSON.stringify(globals.toolOutput);
      if (json !== lastOutput) {
        lastOutput = json;
        events.emit("tool-result", { content: [], structuredContent: globals.toolOutput, isError: false });
      }
    }
  }

  // The output may already be there at load, or arrive later through set_globals.
  takeGlobals({ toolInput: openai.toolInput, toolOutput: openai.toolOutput });
  window.addEventListener("openai:set_globals", (event) => {
    const globals = event?.detail?.globals;
    if (isObject(globals)) takeGlobals(globals);
  });

  function persist(state) {
    saved = state;
    try {
      Promise.resolve(openai.setWidgetState?.(state)).catch(() => {});
    } catch {
      // A host without widget state: the widget still works, it just will not resume.
    }
  }

  return {
    kind: "openai",
    get hostContext() {
      return hostContext;
    },
    hostInfo: null,
    canReadResources: false, // window.openai cannot read resources: use the get_job_result tool
    async callTool(name, args = {}) {
      if (typeof openai.callTool !== "function") throw new Error("This host cannot call tools");
      return normaliseToolResult(await openai.callTool(name, args));
    },
    async readResource() {
      throw new Error("window.openai cannot read resources");
    },
    // Widget state is what ChatGPT shows the model of a widget, so the summary goes there.
    async updateModelContext(text, structuredContent) {
      persist({ ...(saved ?? {}), summary: { text, ...structuredContent } });
    },
    saveState(state) {
      const summary = saved?.jobId === state.jobId ? saved.summary : undefined;
      persist(summary === undefined ? { ...state } : { ...state, summary });
    },
    loadState(jobId) {
      return saved?.jobId === jobId ? saved : null;
    },
    reportSize() {
      // ChatGPT sizes the frame itself.
    },
    // The file the person picks goes to ChatGPT's file store; the job downloads it from there.
    uploadFile:
      typeof openai.uploadFile === "function"
        ? async (file) => {
            const uploaded = await openai.uploadFile(file);
            if (typeof uploaded?.fileId !== "string") throw new Error("The host did not keep the file");
            return uploaded.fileId;
          }
        : undefined,
    async fileDownloadUrl(fileId) {
      const link = await openai.getFileDownloadUrl?.({ fileId });
      if (typeof link?.downloadUrl !== "string") throw new Error("The host gave no link to the file");
      return link.downloadUrl;
    },
    get canFullscreen() {
      return typeof openai.requestDisplayMode === "function";
    },
    async requestFullscreen() {
      await openai.requestDisplayMode({ mode: "fullscreen" });
    },
    on: events.on,
    close() {},
  };
}

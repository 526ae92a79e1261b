/**
 * A `window.openai` shim: the ChatGPT Apps SDK's component bridge, for tests.
 *
 * It exists because no ChatGPT is reachable from tests. It imitates ChatGPT's documented
 * surface (developers.openai.com/apps-sdk/reference, "window.openai component bridge")
 * and nothing more, so a widget that works against it uses only what ChatGPT promises:
 *
 * - globals: `toolInput`, `toolOutput` (the tool's structuredContent), `toolResponseMetadata`
 *   (the result's `_meta`), `widgetState`, `theme`, `locale`, `displayMode`, `maxHeight`,
 *   `safeArea`, `userAgent`;
 * - `setWidgetState(state)`: stores the state (a promise that resolves once stored);
 * - `callTool(name, args)`: calls a tool of the same server; refused, and recorded in
 *   `openaiShim.violations`, unless the tool says `_meta["openai/widgetAccessible"]: true`;
 *   answers with the result's `content`, `structuredContent`, `isError` and `_meta` (also
 *   as `meta`, and its text as `result`, the older documented shapes);
 * - `uploadFile(file)` keeps a file in the host's file store and answers `{fileId}`;
 *   `getFileDownloadUrl({fileId})` answers `{downloadUrl}`, a link the server downloads from
 *   (here the file store is the test's static server, on loopback over plain http, which a
 *   server on loopback may read);
 * - `sendFollowUpMessage({prompt})`, `requestDisplayMode({mode})`, `openExternal({href})`:
 *   recorded, granted as ChatGPT's inline view would (display mode stays "inline");
 * - events on `window`: `openai:set_globals` (`CustomEvent`, `detail.globals` = the globals
 *   that changed) whenever a global changes, and `openai:tool_response` after `callTool`.
 *
 * Playwright injects it with `page.add_init_script`, after a first init script that sets
 * `window.__openaiShimConfig`, into a page that is the widget's HTML served top-level.
 * Tool calls go to the real server through the official client. With `toolResult` in the
 * config the globals start filled (as when ChatGPT renders a finished call); with only
 * `tool` and `arguments`, the shim calls the tool itself after load and `toolOutput`
 * arrives later, by `openai:set_globals`.
 */
import "./jitless";
import { abridge, connect, describe, widgetAccessible, type CallToolResult, type Connection, type Tool } from "./mcp";

type Theme = "light" | "dark";
type DisplayMode = "inline" | "pip" | "fullscreen";
type UnknownObject = Record<string, unknown>;

export interface ShimConfig {
  server: string;
  tool: string;
  arguments?: UnknownObject;
  /** The finished call, when the page should start with it; otherwise the shim makes the call. */
  toolResult?: CallToolResult;
  theme?: Theme;
  locale?: string;
  maxHeight?: number;
  widgetState?: UnknownObject | null;
}

interface Globals {
  theme: Theme;
  locale: string;
  maxHeight: number;
  displayMode: DisplayMode;
  safeArea: { insets: { top: number; bottom: number; left: number; right: number } };
  userAgent: { device: { type: "desktop" }; capabilities: { hover: boolean; touch: boolean } };
  toolInput: UnknownObject;
  toolOutput: UnknownObject | null;
  toolResponseMetadata: UnknownObject | null;
  widgetState: UnknownObject | null;
}

interface CallToolResponse {
  content: CallToolResult["content"];
  structuredContent?: unknown;
  isError: boolean;
  _meta?: UnknownObject;
  meta: UnknownObject;
  result: string;
}

const config = (window as unknown as { __openaiShimConfig?: ShimConfig }).__openaiShimConfig;

/** What the tests read back: every call, refusal, state and message, in order. */
const record = {
  calls: [] as { name: string; arguments: unknown; ok: boolean; isError?: boolean; error?: string }[],
  violations: [] as { tool: string; reason: string }[],
  widgetStates: [] as (UnknownObject | null)[],
  followUps: [] as string[],
  displayModeRequests: [] as string[],
  uploads: [] as { fileId: string; name: string; size: number }[],
  externalLinks: [] as string[],
  setGlobalsEvents: [] as string[][],
  error: null as string | null,
  /** Set once the shim's own call (if any) has delivered toolOutput. */
  delivered: false,
};

function install(shim: ShimConfig): void {
  let connection: Promise<Connection> | null = null;
  const connected = (): Promise<Connection> => (connection ??= connect(shim.server, "chatgpt-openai-shim"));

  const globals: Globals = {
    theme: shim.theme ?? "light",
    locale: shim.locale ?? "en-US",
    maxHeight: shim.maxHeight ?? 2400,
    displayMode: "inline",
    safeArea: { insets: { top: 0, bottom: 0, left: 0, right: 0 } },
    userAgent: { device: { type: "desktop" }, capabilities: { hover: true, touch: false } },
    toolInput: shim.arguments ?? {},
    toolOutput: (shim.toolResult?.structuredContent as UnknownObject | undefined) ?? null,
    toolResponseMetadata: (shim.toolResult?._meta as UnknownObject | undefined) ?? null,
    widgetState: shim.widgetState ?? null,
  };

  const openai = {
    ...globals,

    async setWidgetState(state: UnknownObject): Promise<void> {
      record.widgetStates.push(state);
      setGlobals({ widgetState: state });
    },

    async callTool(name: string, args: UnknownObject | null): Promise<CallToolResponse> {
      const { client, tools } = await connected();
      const tool = tools.get(name);
      if (tool === undefined || !widgetAccessible(tool)) {
        const reason = tool === undefined ? "no such tool on this server" : "not openai/widgetAccessible";
        record.violations.push({ tool: name, reason });
        throw new Error(`callTool(${name}) refused: ${reason}`);
      }
      const entry: (typeof record.calls)[number] = { name, arguments: abridge(args ?? {}), ok: false };
      record.calls.push(entry);
      let result: CallToolResult;
      try {
        result = (await client.callTool({ name, arguments: args ?? {} })) as CallToolResult;
      } catch (error) {
        entry.error = describe(error);
        throw error;
      }
      entry.ok = true;
      entry.isError = result.isError === true;
      window.dispatchEvent(new CustomEvent("openai:tool_response", { detail: { tool: { name, args } } }));
      return respond(result);
    },

    async uploadFile(file: File): Promise<{ fileId: string }> {
      const fileId = `file-${record.uploads.length + 1}-${Math.random().toString(36).slice(2, 10)}`;
      const stored = await fetch(`/uploads/${fileId}`, { method: "PUT", body: file, headers: { "Content-Type": file.type || "application/octet-stream" } });
      if (!stored.ok) throw new Error(`uploadFile: the file store answered ${stored.status}`);
      record.uploads.push({ fileId, name: file.name, size: file.size });
      return { fileId };
    },

    async getFileDownloadUrl({ fileId }: { fileId: string }): Promise<{ downloadUrl: string }> {
      if (!record.uploads.some((upload) => upload.fileId === fileId)) throw new Error(`getFileDownloadUrl: no file ${fileId}`);
      return { downloadUrl: new URL(`/uploads/${fileId}`, location.href).href };
    },

    async sendFollowUpMessage({ prompt }: { prompt: string }): Promise<void> {
      record.followUps.push(prompt);
    },

    async requestDisplayMode({ mode }: { mode: DisplayMode }): Promise<{ mode: DisplayMode }> {
      record.displayModeRequests.push(mode);
      return { mode: openai.displayMode };
    },

    openExternal({ href }: { href: string }): void {
      record.externalLinks.push(href);
    },
  };

  /** Change globals as ChatGPT does: update window.openai, then tell the page what changed. */
  function setGlobals(changed: Partial<Globals>): void {
    Object.assign(openai, changed);
    record.setGlobalsEvents.push(Object.keys(changed));
    window.dispatchEvent(new CustomEvent("openai:set_globals", { detail: { globals: changed } }));
  }

  Object.defineProperty(window, "openai", { value: openai, configurable: false, writable: false });
  // For tests: the record; `setGlobals` to change globals from outside (e.g. ChatGPT's theme);
  // `addTool` to make the shim know a tool the server does not list (to check the refusal rule).
  const addTool = async (tool: Tool): Promise<void> => void (await connected()).tools.set(tool.name, tool);
  (window as unknown as { openaiShim: unknown }).openaiShim = Object.assign(record, { setGlobals, addTool });

  if (shim.toolResult === undefined) {
    // The model's call, made by "ChatGPT" once the page is up; toolOutput arrives by event.
    const deliver = async (): Promise<void> => {
      try {
        const { client } = await connected();
        const result = (await client.callTool({ name: shim.tool, arguments: shim.arguments ?? {} })) as CallToolResult;
        record.calls.push({ name: shim.tool, arguments: abridge(shim.arguments ?? {}), ok: true, isError: result.isError === true });
        setGlobals({
          toolOutput: (result.structuredContent as UnknownObject | undefined) ?? { text: textOf(result) },
          toolResponseMetadata: (result._meta as UnknownObject | undefined) ?? null,
        });
        record.delivered = true;
      } catch (error) {
        record.error = describe(error);
      }
    };
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => void deliver());
    else void deliver();
  } else {
    record.delivered = true;
  }
}

function textOf(result: CallToolResult): string {
  return result.content
    .filter((block): block is { type: "text"; text: string } => block.type === "text")
    .map((block) => block.text)
    .join("\n");
}

function respond(result: CallToolResult): CallToolResponse {
  const meta = (result._meta as UnknownObject | undefined) ?? {};
  return {
    content: result.content,
    structuredContent: result.structuredContent,
    isError: result.isError === true,
    _meta: meta,
    meta,
    result: textOf(result),
  };
}

// Only the top-level page is ChatGPT's widget frame here; frames inside it get no bridge.
if (config !== undefined && window.top === window) install(config);

/**
 * A test MCP Apps host (SEP-1865) for the GiftGenius widget, driven from Playwright.
 *
 * `window.testHost.run({server, tool, arguments, theme, chaos})` does what a chat host
 * does when the model calls a tool that links a view: it connects the official TypeScript
 * client to the real server over Streamable HTTP, lists the tools, reads the tool's
 * `_meta.ui.resourceUri` with `resources/read`, renders the HTML in an iframe sandboxed
 * to `allow-scripts` (no same origin) whose document starts with the Content-Security-
 * Policy the spec's host rules build from `_meta.ui.csp`, and speaks to it through the
 * ext-apps `AppBridge` over `PostMessageTransport`. It calls the tool on the server, and
 * once the view has initialized it sends `tool-input`, then `tool-result`.
 *
 * The view's requests are handled here, not by the bridge's automatic forwarding, so that
 * the host can enforce what the spec says a host MUST: a `tools/call` from the view for a
 * tool whose `_meta.ui.visibility` (default ["model", "app"]) lacks "app" is refused with a
 * JSON-RPC error and recorded in `violations`; everything forwarded is recorded in `calls`.
 *
 * Chaos mode plays a host (or a network) that repeats itself: every `get_job_status`
 * answer relayed to the view carries each event twice plus the previous answer's events
 * again, and once a terminal event has been seen, a stale `job.progress` (lower
 * percentage) and a `job.started`, under sequence numbers already used and past the end;
 * the tool-result notification is sent twice. A correct view shows none of it.
 *
 * Like a chat host, it outlives its server's sessions: when a request fails because the
 * server no longer knows the session (HTTP 404 for its `Mcp-Session-Id`, as after a restart)
 * or cannot be reached, the host connects anew (a new Client and transport, `initialize`) and
 * retries the request once on the new session; if that fails too (the server is still
 * down), the request fails and the view's own backoff takes over. `reconnects` lists the
 * new sessions, `reconnectFailures` the attempts that found no server.
 */
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";
import type { McpUiHostCapabilities, McpUiHostContext, McpUiStyles } from "@modelcontextprotocol/ext-apps/app-bridge";
import { ProtocolError, ProtocolErrorCode } from "@modelcontextprotocol/client";
import type { Client } from "@modelcontextprotocol/client";
import {
  abridge,
  buildCsp,
  connect,
  connectionLost,
  describe,
  httpStatusOf,
  injectCsp,
  readUiResource,
  resourceUriOf,
  visibilityOf,
  type CallToolResult,
  type Connection,
  type Tool,
} from "./mcp";

type Theme = "light" | "dark";

export interface RunOptions {
  /** The MCP endpoint, e.g. http://127.0.0.1:8123/mcp */
  server: string;
  tool: string;
  arguments?: Record<string, unknown>;
  theme?: Theme;
  chaos?: boolean;
  /** Declare `hostCapabilities.serverResources` (default true); false makes the view use get_job_result. */
  serverResources?: boolean;
  /** `containerDimensions.maxHeight` in the host context (default 2400): the view grows up to it, then scrolls. */
  maxHeight?: number;
  /** Hold tool-input and tool-result after the view initializes, until `openGate()` (to set up observers). */
  gate?: boolean;
}

export interface CallRecord {
  source: "host" | "app";
  method: "tools/call" | "resources/read";
  name?: string;
  uri?: string;
  arguments?: unknown;
  ok: boolean;
  isError?: boolean;
  error?: string;
  /** The answer's `structuredContent.nextCursor`, when it has one (a job status, a page). */
  nextCursor?: string;
  /** The first attempt lost its connection; this is why, and the call was retried on a new session. */
  lostConnection?: string;
  /** The session that answered (or last failed). */
  sessionId?: string;
  at: number;
}

export interface Reconnect {
  /** Why: the error of the request that found its connection gone, and its HTTP status if any. */
  reason: string;
  httpStatus: number | undefined;
  from: string | undefined;
  to: string | undefined;
  at: number;
}

export interface Violation {
  tool: string;
  visibility: string[] | null;
  reason: string;
  at: number;
}

interface JobEvent {
  eventId: string;
  type: string;
  jobId: string;
  timestamp: string;
  [key: string]: unknown;
}

const HOST_INFO = { name: "giftgenius-test-host", version: "1.0.0" };
const TERMINAL_TYPES = new Set(["job.completed", "job.failed", "job.cancelled"]);

/** A few of the spec's standard variables, as a host themes its views. */
function styleVariables(theme: Theme): McpUiStyles {
  const dark = theme === "dark";
  return {
    "--color-background-primary": dark ? "#1f1f1f" : "#ffffff",
    "--color-background-secondary": dark ? "#2a2a2a" : "#f5f5f4",
    "--color-text-primary": dark ? "#f5f5f5" : "#1c1917",
    "--color-text-secondary": dark ? "#a8a29e" : "#57534e",
    "--color-border-primary": dark ? "#3f3f46" : "#e7e5e4",
    "--font-sans": "system-ui, -apple-system, 'Segoe UI', sans-serif",
    "--border-radius-md": "8px",
  } as McpUiStyles;
}

class TestHost {
  calls: CallRecord[] = [];
  violations: Violation[] = [];
  /** Every `ui/update-model-context` the view sent, in order; the host keeps the last. */
  modelContextUpdates: Record<string, unknown>[] = [];
  logs: unknown[] = [];
  messages: unknown[] = [];
  sizes: { width?: number; height?: number }[] = [];
  /** Every display mode the view asked for; fullscreen is granted (the frame fills the window). */
  displayModeRequests: string[] = [];
  /** What chaos mode added to the answers it relayed. */
  injected: { duplicates: number; replays: number; stale: JobEvent[] } = { duplicates: 0, replays: 0, stale: [] };
  /** New sessions the host opened after losing one; `reconnectFailures`, attempts that found no server. */
  reconnects: Reconnect[] = [];
  reconnectFailures: { reason: string; error: string; at: number }[] = [];
  /** The view's answer to `ui/resource-teardown`, once it came, and when. */
  teardownAnswer: Record<string, unknown> | null = null;
  teardownAnsweredAt: number | null = null;
  status: "idle" | "running" | "ready" | "error" | "torn-down" = "idle";
  error: string | null = null;
  initialized = false;
  resource: { uri: string; csp: unknown; policy: string; prefersBorder: boolean | undefined } | null = null;
  toolResult: CallToolResult | null = null;

  private connection: Connection | null = null;
  private serverUrl = "";
  private reconnecting: Promise<Connection> | null = null;
  private bridge: AppBridge | null = null;
  private iframe: HTMLIFrameElement | null = null;
  private context: McpUiHostContext = {};
  private chaos = false;
  private previousEvents: JobEvent[] = [];
  private terminalSeen = false;
  private highestSequence = new Map<string, number>();
  private releaseGate: () => void = () => {};

  /** The last model context the view set (each update overwrites the one before). */
  get modelContext(): Record<string, unknown> | null {
    return this.modelContextUpdates.at(-1) ?? null;
  }

  async run(options: RunOptions): Promise<{ resourceUri: string; policy: string; toolResult: CallToolResult }> {
    if (this.status !== "idle") throw new Error("testHost.run() renders one view per page; open a new page");
    this.status = "running";
    try {
      return await this.render(options);
    } catch (error) {
      this.status = "error";
      this.error = describe(error);
      document.getElementById("status")!.textContent = `error: ${this.error}`;
      throw error;
    }
  }

  private async render(options: RunOptions) {
    const theme: Theme = options.theme ?? "light";
    const args = options.arguments ?? {};
    this.chaos = options.chaos ?? false;
    this.serverUrl = options.server;
    this.connection = await connect(options.server, HOST_INFO.name);
    const { client, tools } = this.connection;

    const tool = tools.get(options.tool);
    if (tool === undefined) throw new Error(`the server has no tool named ${options.tool}`);
    const uri = resourceUriOf(tool);
    if (uri === undefined) {
      throw new Error(
        `tool ${options.tool} declares no _meta.ui.resourceUri, so there is no widget to render: ` +
          `this server build does not link the GiftGenius widget to its tools`,
      );
    }
    const view = await readUiResource(client, uri);
    const policy = buildCsp(view.csp);
    this.resource = { uri, csp: view.csp ?? null, policy, prefersBorder: view.prefersBorder };

    const iframe = document.createElement("iframe");
    iframe.id = "widget";
    iframe.name = "widget";
    iframe.title = tool.title ?? options.tool;
    iframe.setAttribute("sandbox", "allow-scripts");
    iframe.className = view.prefersBorder === false ? "borderless" : "bordered";
    document.getElementById("stage")!.append(iframe);
    this.iframe = iframe;

    this.context = {
      toolInfo: { tool },
      theme,
      styles: { variables: styleVariables(theme) },
      displayMode: "inline",
      availableDisplayModes: ["inline", "fullscreen"],
      containerDimensions: { width: 720, maxHeight: options.maxHeight ?? 2400 },
      locale: "en-US",
      timeZone: "UTC",
      platform: "web",
      userAgent: HOST_INFO.name,
      deviceCapabilities: { touch: false, hover: true },
    };
    const capabilities: McpUiHostCapabilities = {
      serverTools: {},
      logging: {},
      updateModelContext: { text: {}, structuredContent: {} },
      sandbox: { csp: view.csp ?? {} },
    };
    if (options.serverResources ?? true) capabilities.serverResources = {};
    const bridge = new AppBridge(null, HOST_INFO, capabilities, { hostContext: this.context });
    this.bridge = bridge;
    let initialized!: () => void;
    const ready = new Promise<void>((resolve) => (initialized = resolve));
    bridge.oninitialized = () => {
      this.initialized = true;
      initialized();
    };
    bridge.oncalltool = (params) => this.handleAppToolCall(params);
    bridge.onreadresource = async (params) => {
      const record: CallRecord = { source: "app", method: "resources/read", uri: params.uri, ok: false, at: now() };
      this.calls.push(record);
      try {
        const result = await this.onServer(record, (current) => current.readResource({ uri: params.uri }));
        record.ok = true;
        return result;
      } catch (error) {
        record.error = describe(error);
        throw error;
      }
    };
    bridge.onupdatemodelcontext = async (params) => {
      this.modelContextUpdates.push(params as Record<string, unknown>);
      return {};
    };
    bridge.onloggingmessage = (params) => void this.logs.push(params);
    bridge.onmessage = async (params) => {
      this.messages.push(params);
      return {};
    };
    bridge.onrequestdisplaymode = async ({ mode }) => {
      this.displayModeRequests.push(mode);
      const granted = mode === "fullscreen" ? "fullscreen" : "inline";
      iframe.classList.toggle("fullscreen", granted === "fullscreen");
      this.context = { ...this.context, displayMode: granted };
      bridge.setHostContext(this.context);
      return { mode: granted };
    };
    bridge.onsizechange = ({ width, height }) => {
      this.sizes.push({ width, height });
      if (height !== undefined) iframe.style.height = `${Math.ceil(height)}px`;
    };
    // Connect before the document loads, so the view's ui/initialize finds us listening.
    await bridge.connect(new PostMessageTransport(iframe.contentWindow!, iframe.contentWindow!));
    iframe.srcdoc = injectCsp(view.html, policy);

    // As a chat host does: the call runs while the view starts.
    const call = this.callOnServer("host", options.tool, args);
    await ready;
    if (options.gate) await new Promise<void>((resolve) => (this.releaseGate = resolve));
    await bridge.sendToolInput({ arguments: args });
    const result = await call;
    this.toolResult = result;
    await bridge.sendToolResult(result);
    if (this.chaos) await bridge.sendToolResult(result);
    this.status = "ready";
    document.getElementById("status")!.textContent = `showing ${uri}`;
    return { resourceUri: uri, policy, toolResult: result };
  }

  /** The host's answer to a view's `tools/call`: the spec's visibility rule, then the server. */
  async handleAppToolCall(params: { name: string; arguments?: Record<string, unknown> }): Promise<CallToolResult> {
    const tool = this.connection?.tools.get(params.name);
    if (tool === undefined) {
      this.violations.push({ tool: params.name, visibility: null, reason: "no such tool on this server", at: now() });
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${params.name}`);
    }
    const visibility = visibilityOf(tool);
    if (!visibility.includes("app")) {
      this.violations.push({ tool: params.name, visibility, reason: "visibility lacks app", at: now() });
      throw new ProtocolError(
        ProtocolErrorCode.InvalidRequest,
        `Tool ${params.name} is not callable by apps (visibility: ${JSON.stringify(visibility)})`,
      );
    }
    const result = await this.callOnServer("app", params.name, params.arguments ?? {});
    if (this.chaos && params.name === "get_job_status") return this.scramble(result);
    return result;
  }

  /** Let a gated run() go on to tool-input and tool-result. */
  openGate(): void {
    this.releaseGate();
  }

  /** Make the host know one more tool, as if the server had listed it (for checking the rule itself). */
  addTool(tool: Tool): void {
    if (this.connection === null) throw new Error("run() first: the host has no server yet");
    this.connection.tools.set(tool.name, tool);
  }

  private async callOnServer(source: "host" | "app", name: string, args: Record<string, unknown>) {
    const record: CallRecord = { source, method: "tools/call", name, arguments: abridge(args), ok: false, at: now() };
    this.calls.push(record);
    try {
      const result = (await this.onServer(record, (client) =>
        client.callTool({ name, arguments: args }),
      )) as CallToolResult;
      record.ok = true;
      record.isError = result.isError === true;
      const cursor = (result.structuredContent as { nextCursor?: unknown } | undefined)?.nextCursor;
      if (typeof cursor === "string") record.nextCursor = cursor;
      return result;
    } catch (error) {
      record.error = describe(error);
      if (source === "app") throw error;
      // The model's own call failed at the protocol level: the view still gets a result to show.
      return { content: [{ type: "text", text: record.error }], isError: true } as CallToolResult;
    }
  }

  /**
   * One request on the current session; if its connection is gone, a new session and one retry.
   * While the server is down the reconnection fails too, and so does the request.
   */
  private async onServer<T>(record: CallRecord, request: (client: Client) => Promise<T>): Promise<T> {
    const used = this.connection!;
    record.sessionId = used.sessionId;
    try {
      return await request(used.client);
    } catch (error) {
      if (!connectionLost(error) || this.status === "torn-down") throw error;
      record.lostConnection = describe(error);
      const fresh = await this.reconnect(used, error);
      record.sessionId = fresh.sessionId;
      return await request(fresh.client);
    }
  }

  /** A new connection in place of `lost`, shared by every request that lost it at the same time. */
  private reconnect(lost: Connection, cause: unknown): Promise<Connection> {
    const reason = describe(cause);
    if (this.connection !== lost) return Promise.resolve(this.connection!); // another request reconnected
    this.reconnecting ??= (async () => {
      try {
        const fresh = await connect(this.serverUrl, HOST_INFO.name);
        this.connection = fresh;
        const httpStatus = httpStatusOf(cause);
        this.reconnects.push({ reason, httpStatus, from: lost.sessionId, to: fresh.sessionId, at: now() });
        void lost.close().catch(() => {});
        return fresh;
      } catch (error) {
        this.reconnectFailures.push({ reason, error: describe(error), at: now() });
        throw error;
      } finally {
        this.reconnecting = null;
      }
    })();
    return this.reconnecting;
  }

  private scramble(result: CallToolResult): CallToolResult {
    const content = result.structuredContent as { jobId?: string; events?: JobEvent[] } | undefined;
    if (content === undefined || !Array.isArray(content.events) || typeof content.jobId !== "string") {
      return result;
    }
    const jobId = content.jobId;
    const original = content.events;
    const events: JobEvent[] = [];
    for (const event of original) events.push(event, { ...event });
    this.injected.duplicates += original.length;
    events.push(...this.previousEvents.map((event) => ({ ...event })));
    this.injected.replays += this.previousEvents.length;
    for (const event of original) {
      const sequence = Number(event.eventId.split(":").at(-1));
      if (sequence > (this.highestSequence.get(jobId) ?? 0)) this.highestSequence.set(jobId, sequence);
      if (TERMINAL_TYPES.has(event.type)) this.terminalSeen = true;
    }
    if (this.terminalSeen) {
      const highest = this.highestSequence.get(jobId) ?? 1;
      const used = Math.max(1, highest - 1);
      const stamp = new Date().toISOString();
      const stale: JobEvent[] = [
        { eventId: `${jobId}:${used}`, type: "job.progress", jobId, timestamp: stamp, percentage: 12, stage: "parse" },
        { eventId: `${jobId}:${highest + 1}`, type: "job.progress", jobId, timestamp: stamp, percentage: 7, stage: "parse" },
        { eventId: `${jobId}:2`, type: "job.started", jobId, timestamp: stamp, status: "running" },
        { eventId: `${jobId}:${highest + 2}`, type: "job.started", jobId, timestamp: stamp, status: "running" },
      ];
      events.push(...stale);
      this.injected.stale.push(...stale);
    }
    this.previousEvents = original;
    return { ...result, structuredContent: { ...content, events } };
  }

  /** Tell the view the theme changed (`ui/notifications/host-context-changed`). */
  async setTheme(theme: Theme): Promise<void> {
    if (this.bridge === null || !this.initialized) throw new Error("no initialized view to tell");
    this.context = { ...this.context, theme, styles: { variables: styleVariables(theme) } };
    this.bridge.setHostContext(this.context);
  }

  /**
   * `ui/resource-teardown`, then remove the iframe, as a host does when the view goes away;
   * returns the view's answer. With `removeView: false` the view, the bridge and the server
   * connection stay, as in a host that unmounts later: whatever the view still asks is relayed.
   */
  async teardown(options: { removeView?: boolean } = {}): Promise<Record<string, unknown> | null> {
    if (this.bridge !== null && this.initialized) {
      this.teardownAnswer = await this.bridge.teardownResource({});
      this.teardownAnsweredAt = now();
    }
    if (options.removeView ?? true) {
      await this.bridge?.close();
      this.iframe?.remove();
      await this.connection?.close();
      this.status = "torn-down";
    }
    return this.teardownAnswer;
  }
}

function now(): number {
  return Math.round(performance.now());
}

declare global {
  interface Window {
    testHost: TestHost;
  }
}

window.testHost = new TestHost();

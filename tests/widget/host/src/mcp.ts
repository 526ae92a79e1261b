/**
 * What the test host and the window.openai shim share: the connection to the real
 * GiftGenius server (the official TypeScript SDK's Client over Streamable HTTP), the rules
 * a host applies to a widget's tool calls, and the Content-Security-Policy a host builds
 * from a UI resource's declared domains.
 */
import { Client, SdkHttpError, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import type { CallToolResult, ReadResourceResult, Tool } from "@modelcontextprotocol/client";

export type { CallToolResult, ReadResourceResult, Tool };

/** MIME type of an MCP Apps HTML view (SEP-1865, 2026-01-26). */
export const UI_MIME_TYPE = "text/html;profile=mcp-app";
export const UI_EXTENSION = "io.modelcontextprotocol/ui";

export interface Connection {
  client: Client;
  tools: Map<string, Tool>;
  /** The `Mcp-Session-Id` the server gave at `initialize` (none in a sessionless era). */
  readonly sessionId: string | undefined;
  close(): Promise<void>;
}

/** Connect the official client to `serverUrl` (…/mcp) and list every tool, page by page. */
export async function connect(serverUrl: string, clientName: string): Promise<Connection> {
  const client = new Client(
    { name: clientName, version: "1.0.0" },
    // A host that renders MCP Apps says so; the server does not depend on it.
    { capabilities: { extensions: { [UI_EXTENSION]: { mimeTypes: [UI_MIME_TYPE] } } } },
  );
  const transport = new StreamableHTTPClientTransport(new URL(serverUrl));
  try {
    await client.connect(transport);
  } catch (error) {
    await client.close().catch(() => {});
    throw new Error(
      `could not connect to the MCP server at ${serverUrl} from this page ` +
        `(is it running, and does it answer cross-origin requests with CORS headers?): ${describe(error)}`,
    );
  }
  const tools = new Map<string, Tool>();
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    for (const tool of page.tools) tools.set(tool.name, tool);
    cursor = page.nextCursor;
  } while (cursor);
  return {
    client,
    tools,
    get sessionId() {
      return transport.sessionId;
    },
    close: () => client.close(),
  };
}

/**
 * Whether a request failed because its connection is gone, as after a server restart: the
 * server answered HTTP 404 for an `Mcp-Session-Id` it does not know, or could not be reached
 * at all (fetch rejects with a TypeError: refused, reset). A host then starts a new session.
 */
export function connectionLost(error: unknown): boolean {
  if (error instanceof SdkHttpError) return error.status === 404;
  return error instanceof TypeError && /fetch|network/i.test(error.message);
}

/** The HTTP status of a failed request, when the server answered one. */
export function httpStatusOf(error: unknown): number | undefined {
  return error instanceof SdkHttpError ? error.status : undefined;
}

export function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

type Meta = Record<string, unknown>;

function meta(tool: Tool): Meta {
  return (tool._meta ?? {}) as Meta;
}

function uiMeta(tool: Tool): Meta {
  const ui = meta(tool).ui;
  return ui !== null && typeof ui === "object" ? (ui as Meta) : {};
}

/** The widget a tool links to: `_meta.ui.resourceUri` (MCP Apps). */
export function resourceUriOf(tool: Tool): string | undefined {
  const uri = uiMeta(tool).resourceUri;
  return typeof uri === "string" ? uri : undefined;
}

/** `_meta.ui.visibility`, defaulting to ["model", "app"] as the spec says. */
export function visibilityOf(tool: Tool): string[] {
  const visibility = uiMeta(tool).visibility;
  return Array.isArray(visibility) ? visibility.map(String) : ["model", "app"];
}

/** ChatGPT lets a widget call a tool only when the tool says `openai/widgetAccessible: true`. */
export function widgetAccessible(tool: Tool): boolean {
  return meta(tool)["openai/widgetAccessible"] === true;
}

export interface ResourceCsp {
  connectDomains?: string[];
  resourceDomains?: string[];
  frameDomains?: string[];
  baseUriDomains?: string[];
}

function sources(domains: string[] | undefined): string {
  return (domains ?? []).filter((d) => /^[^\s;,'"]+$/.test(d)).join(" ");
}

/**
 * The policy the spec's host rules give a view (SEP-1865, "Host Behavior" and "Sandbox
 * proxy"): with no `ui.csp`, exactly the restrictive default; with one, the declared
 * domains added to the directives they map to and nothing else (`connectDomains` →
 * connect-src; `resourceDomains` → script/style/img/font/media-src; `frameDomains` →
 * frame-src, else 'none'; `baseUriDomains` → base-uri, else 'self'), and `object-src 'none'`.
 */
export function buildCsp(csp: ResourceCsp | undefined): string {
  if (csp === undefined) {
    return [
      "default-src 'none'",
      "script-src 'self' 'unsafe-inline'",
      "style-src 'self' 'unsafe-inline'",
      "img-src 'self' data:",
      "media-src 'self' data:",
      "connect-src 'none'",
      "frame-src 'none'",
      "base-uri 'self'",
      "object-src 'none'",
    ].join("; ");
  }
  const resources = sources(csp.resourceDomains);
  const withResources = (base: string): string => (resources ? `${base} ${resources}` : base);
  return [
    "default-src 'none'",
    withResources("script-src 'self' 'unsafe-inline'"),
    withResources("style-src 'self' 'unsafe-inline'"),
    withResources("img-src 'self' data:"),
    withResources("font-src 'self'"),
    withResources("media-src 'self' data:"),
    `connect-src ${sources(csp.connectDomains) || "'none'"}`,
    `frame-src ${sources(csp.frameDomains) || "'none'"}`,
    `base-uri ${sources(csp.baseUriDomains) || "'self'"}`,
    "object-src 'none'",
  ].join("; ");
}

/** Put `<meta http-equiv="Content-Security-Policy">` first in the document's head, before any script. */
export function injectCsp(html: string, policy: string): string {
  const tag = `<meta http-equiv="Content-Security-Policy" content="${policy.replace(/"/g, "&quot;")}">`;
  const head = /<head(\s[^>]*)?>/i.exec(html);
  if (head) return html.slice(0, head.index + head[0].length) + tag + html.slice(head.index + head[0].length);
  const root = /<html(\s[^>]*)?>/i.exec(html);
  if (root) {
    const at = root.index + root[0].length;
    return `${html.slice(0, at)}<head>${tag}</head>${html.slice(at)}`;
  }
  return `<head>${tag}</head>${html}`;
}

export interface UiResource {
  uri: string;
  mimeType: string;
  html: string;
  csp: ResourceCsp | undefined;
  prefersBorder: boolean | undefined;
  meta: Meta;
}

/** `resources/read` a `ui://` resource and check it is an MCP Apps view. */
export async function readUiResource(client: Client, uri: string): Promise<UiResource> {
  const read: ReadResourceResult = await client.readResource({ uri });
  const content = read.contents[0] as
    | { uri: string; mimeType?: string; text?: string; blob?: string; _meta?: Meta }
    | undefined;
  if (content === undefined) throw new Error(`resources/read ${uri} returned no contents`);
  if (content.mimeType !== UI_MIME_TYPE) {
    throw new Error(`resources/read ${uri}: mimeType is ${String(content.mimeType)}, not ${UI_MIME_TYPE}`);
  }
  let html: string;
  if (typeof content.text === "string") html = content.text;
  else if (typeof content.blob === "string") {
    html = new TextDecoder().decode(Uint8Array.from(atob(content.blob), (c) => c.charCodeAt(0)));
  } else throw new Error(`resources/read ${uri}: the content has neither text nor blob`);
  const contentMeta = content._meta ?? {};
  const ui = (contentMeta.ui ?? {}) as { csp?: ResourceCsp; prefersBorder?: boolean };
  return { uri, mimeType: content.mimeType, html, csp: ui.csp, prefersBorder: ui.prefersBorder, meta: contentMeta };
}

/** Arguments fit for a log: long strings (a CSV of thousands of rows) are cut. */
export function abridge(value: unknown): unknown {
  if (typeof value === "string") return value.length > 200 ? `${value.slice(0, 200)}… (${value.length} chars)` : value;
  if (Array.isArray(value)) return value.map(abridge);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, abridge(v)]));
  }
  return value;
}

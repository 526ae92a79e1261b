// One shape for tool results, whichever host produced them: an MCP CallToolResult
// `{content, structuredContent?, isError}`. The rest of the widget reads only this shape.

function isObject(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function looksLikeCallToolResult(value) {
  return isObject(value) && ("content" in value || "structuredContent" in value || "isError" in value);
}

function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Normalises what a host returned for a tool call.
 *
 * MCP Apps hosts return a CallToolResult. `window.openai.callTool` returns one too in current
 * ChatGPT, while older Apps SDK builds answered `{result: "<text>"}` where the text may be the
 * JSON of the structured content; any other bare object is taken as structured content.
 */
export function normaliseToolResult(raw) {
  if (looksLikeCallToolResult(raw)) {
    const result = {
      content: Array.isArray(raw.content) ? raw.content : [],
      isError: raw.isError === true,
    };
    if (isObject(raw.structuredContent)) result.structuredContent = raw.structuredContent;
    return result;
  }
  if (isObject(raw) && typeof raw.result === "string") {
    const parsed = parseJson(raw.result);
    if (looksLikeCallToolResult(parsed)) return normaliseToolResult(parsed);
    const result = { content: [{ type: "text", text: raw.result }], isError: false };
    if (isObject(parsed)) result.structuredContent = parsed;
    return result;
  }
  if (typeof raw === "string") return normaliseToolResult({ result: raw });
  if (isObject(raw)) return { content: [], structuredContent: raw, isError: false };
  return { content: [], isError: false };
}

/** The text blocks of a result's content, joined: what a person should read of it. */
export function resultText(result) {
  const blocks = Array.isArray(result?.content) ? result.content : [];
  return blocks
    .filter((block) => block?.type === "text" && typeof block.text === "string")
    .map((block) => block.text)
    .join("\n")
    .trim();
}

/** An Error for a tool result with `isError`, carrying its text. */
export function toolError(name, result) {
  const error = new Error(resultText(result) || `${name} returned an error`);
  error.toolResult = result;
  return error;
}

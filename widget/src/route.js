// Which view a tool result calls for. The result's structuredContent decides: `gifts` is a
// suggestion list, `jobId` a bulk job to follow. The tool's name only fills in words while
// waiting. `_meta` is never read: ChatGPT replaces it.

import { resultText } from "./bridge/tool-result.js";

export const BULK_TOOL = "start_bulk_gift_analysis";
export const SUGGEST_TOOL = "suggest_gifts";
export const FORM_TOOL = "open_bulk_gift_form";

/**
 * @param {{content: any[], structuredContent?: object, isError: boolean}} result normalised
 * @returns {{view: "gifts", gifts: object[], notice?: string} | {view: "job", jobId: string, status: string}
 *   | {view: "form", form: object} | {view: "error", message: string}}
 */
export function routeToolResult(result) {
  const data = result?.structuredContent;
  if (result?.isError) {
    return { view: "error", message: resultText(result) || "The tool reported an error." };
  }
  if (data?.form === "bulk") {
    // The form to pick the employee file in: what the model set up, and the server's size limit.
    return { view: "form", form: data };
  }
  if (Array.isArray(data?.gifts) && data.gifts.length === 0 && typeof data.notice === "string" && data.notice) {
    // Nothing fits: under window.openai no text reaches the view, so the notice says why.
    return { view: "error", message: data.notice };
  }
  if (Array.isArray(data?.gifts)) {
    const gifts = data.gifts.filter((gift) => typeof gift === "object" && gift !== null);
    // Cards with a notice: e.g. nothing in the catalog matches one interest, these are the closest.
    return typeof data.notice === "string" && data.notice ? { view: "gifts", gifts, notice: data.notice } : { view: "gifts", gifts };
  }
  if (typeof data?.jobId === "string" && data.jobId) {
    return { view: "job", jobId: data.jobId, status: typeof data.status === "string" ? data.status : "pending" };
  }
  const text = resultText(result);
  return { view: "error", message: text || "GiftGenius cannot show this result." };
}

/** What to say while the result is on its way, from the tool's name or its arguments. */
export function waitingMessage(toolName, args) {
  if (toolName === BULK_TOOL || typeof args?.csv === "string") return "Starting the bulk gift analysis…";
  if (toolName === FORM_TOOL) return "Opening the form…";
  if (toolName === SUGGEST_TOOL || typeof args?.recipient === "string") return "Finding gift ideas…";
  return "Waiting for the result…";
}

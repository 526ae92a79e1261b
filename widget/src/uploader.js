// Starting a bulk job from a file the person picked or dropped on the widget, with no DOM.
//
// Two ways in, by host:
// - ChatGPT (`window.openai`): the host keeps the file (`uploadFile`) and gives a link to it
//   (`getFileDownloadUrl`); the job gets that link as `employees_file`, exactly as when the
//   person attaches the file to the chat, and downloads it as its first stage.
// - MCP Apps hosts pass no files: the job starts with a description of the file (`upload`),
//   then the widget sends the bytes in parts through `send_job_file_part`, a tool only
//   widgets see. The job receives them as its first stage and reports the bytes so far,
//   so the person watches the upload and the analysis in the one progress bar.

import { resultText } from "./bridge/tool-result.js";
import { BULK_TOOL } from "./route.js";

export const SEND_PART_TOOL = "send_job_file_part";
// The server's part size (herald.server.uploads.PART_BYTES): every part but the last holds this much.
export const PART_BYTES = 256 * 1024;
// A part the host fails to pass on is sent again this many times, after growing pauses.
export const PART_ATTEMPTS = 4;
const RETRY_PAUSE_MS = 500;

/** The base64 text of some bytes, built in slices so a 256 KiB part never overflows the call stack. */
export function toBase64(bytes) {
  let binary = "";
  for (let start = 0; start < bytes.length; start += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(start, start + 0x8000));
  }
  return btoa(binary);
}

/** Why a file cannot be sent, in words for the person; null if it can. */
export function fileProblem(file, maxBytes) {
  if (!file) return "Choose the employee file first.";
  if (file.size === 0) return `${file.name} is empty.`;
  if (maxBytes && file.size > maxBytes) {
    const mb = (bytes) => (bytes / 1048576).toFixed(1);
    return `${file.name} is ${mb(file.size)} MB; the limit is ${mb(maxBytes)} MB. Split it into smaller files.`;
  }
  return null;
}

function failure(result, fallback) {
  return new Error(resultText(result) || fallback);
}

/** The job id a start answered with, or the error the server gave. */
function jobIdOf(result) {
  const jobId = result?.structuredContent?.jobId;
  if (result?.isError || typeof jobId !== "string" || !jobId) throw failure(result, "The analysis could not start.");
  return jobId;
}

/**
 * Start the analysis of `file`.
 *
 * @param {object} options
 * @param {object} options.host the host adapter (callTool; uploadFile and fileDownloadUrl under window.openai)
 * @param {File|Blob & {name: string}} options.file
 * @param {{occasion: string, budget_per_person: number}} options.settings
 * @param {(stage: string) => void} [options.onStage] what is happening before the job exists
 * @param {(ms: number) => Promise<void>} [options.pause]
 * @returns {Promise<{jobId: string, sent: Promise<void>}>} once the job exists; `sent`
 *   settles when every part is on the server (at once under window.openai), or fails with why
 */
export async function startAnalysis({ host, file, settings, onStage = () => {}, pause = defaultPause }) {
  const described = { file_name: file.name, mime_type: file.type || "text/csv" };
  if (typeof host.uploadFile === "function") {
    onStage("Uploading the file…");
    const fileId = await host.uploadFile(file);
    const downloadUrl = await host.fileDownloadUrl(fileId);
    const attached = { download_url: downloadUrl, file_id: fileId, ...described };
    const jobId = jobIdOf(await host.callTool(BULK_TOOL, { employees_file: attached, ...settings }));
    return { jobId, sent: Promise.resolve() };
  }
  onStage("Starting the analysis…");
  const jobId = jobIdOf(await host.callTool(BULK_TOOL, { upload: { size: file.size, ...described }, ...settings }));
  return { jobId, sent: sendParts({ host, jobId, file, pause }) };
}

/** Send every part of `file` to job `jobId`, in order, each retried a few times. */
export async function sendParts({ host, jobId, file, pause = defaultPause }) {
  for (let index = 0, start = 0; start < file.size; index += 1, start += PART_BYTES) {
    const bytes = new Uint8Array(await file.slice(start, start + PART_BYTES).arrayBuffer());
    await sendPart({ host, jobId, index, data: toBase64(bytes), pause });
  }
}

async function sendPart({ host, jobId, index, data, pause }) {
  let lastError = null;
  for (let attempt = 1; attempt <= PART_ATTEMPTS; attempt += 1) {
    try {
      const result = await host.callTool(SEND_PART_TOOL, { jobId, index, data });
      // The server refused the part itself (the job ended, say): sending again cannot help.
      if (result?.isError) throw Object.assign(failure(result, "The server refused the file."), { final: true });
      return;
    } catch (error) {
      if (error?.final) throw error;
      lastError = error;
      if (attempt < PART_ATTEMPTS) await pause(RETRY_PAUSE_MS * 2 ** (attempt - 1));
    }
  }
  throw new Error(`The file could not be sent: ${lastError?.message ?? "the host did not pass it on"}`);
}

function defaultPause(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

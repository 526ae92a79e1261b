// The job view: progress, status, cancel, errors and, once done, the results.
//
// It is built once per job and then updated in place from the session's state, so the
// progress bar glides instead of flickering, focus stays where it was, and the live regions
// speak only when their text really changes.

import { formatEta, formatUsd, stageLabel, wholePercent } from "../format.js";
import { h, setText } from "./dom.js";
import { renderResults } from "./results.js";

// The steps under the bar, in the order the job goes through them. The file step is shown
// only for a job that fetched its file (sent by the widget, or attached in ChatGPT).
const STEPS = [
  ["file", "File"],
  ["parse", "Read"],
  ["extract", "Interests"],
  ["match", "Match"],
  ["write", "Write"],
];

/** Which step a stage belongs to: the file step's stages say what they do with bytes so far. */
export function stepOf(stage) {
  if (typeof stage !== "string") return null;
  if (/^(receiving|downloading) the file/.test(stage)) return "file";
  if (stage === "saving the results") return "write";
  return STEPS.some(([key]) => key === stage) ? stage : null;
}

const STATUS_WORDS = {
  pending: "Queued",
  running: "Running",
  completed: "Completed",
  failed: "Failed",
  cancelled: "Cancelled",
};

// One sentence for the live region: it changes with the job's status, not with each percent
// (the progress bar carries the numbers), so a screen reader is not flooded.
function statusSentence(state) {
  const { status } = state;
  if (status === "completed") {
    if (state.result.status === "ready") return state.summaryText || "Completed. The results are below.";
    if (state.result.status === "failed") return "Completed, but the results could not be loaded.";
    return "Completed. Loading the results…";
  }
  if (status === "failed") return "The analysis failed.";
  if (status === "cancelled") return state.cancelReason ? `Cancelled: ${state.cancelReason}.` : "Cancelled.";
  if (state.cancelling) return "Cancelling…";
  if (status === "running") return "Working on it…";
  return "Waiting to start…";
}

function subtitle(args) {
  const parts = [];
  if (typeof args?.occasion === "string" && args.occasion) parts.push(`Occasion: ${args.occasion}`);
  if (typeof args?.budget_per_person === "number") parts.push(`${formatUsd(args.budget_per_person)} per person`);
  return parts.join(" · ");
}

/**
 * @param {object} options
 * @param {string} options.jobId
 * @param {object|null} options.args the start tool's input, for the subtitle
 * @param {() => void} options.onCancel
 * @param {() => void} options.onRetryResult
 * @param {(() => void)|null} [options.onFullscreen] where the host offers fullscreen: open it
 * @returns {{element: HTMLElement, update: (state: object) => void}}
 */
export function createJobView({ jobId, args, onCancel, onRetryResult, onFullscreen = null }) {
  const fill = h("div", { class: "progress-fill" });
  const bar = h(
    "div",
    {
      class: "progress",
      role: "progressbar",
      "aria-label": "Bulk gift analysis progress",
      "aria-valuemin": "0",
      "aria-valuemax": "100",
      "aria-valuenow": "0",
      "aria-valuetext": "0%",
    },
    fill,
  );
  const badge = h("span", { class: "job-badge", "aria-hidden": "true" });
  const percent = h("span", { class: "job-percent", "aria-hidden": "true" });
  const stage = h("span", { class: "job-stage" });
  const eta = h("span", { class: "job-eta" });
  const status = h("p", { class: "job-status", role: "status", "aria-live": "polite" });
  const notice = h("p", { class: "job-notice", role: "alert" });
  const connection = h("p", { class: "connection", "aria-live": "polite" });
  const errorMessage = h("p", { class: "error-message" });
  const errorHint = h("p", { class: "error-hint" });
  const error = h("div", { class: "job-error", role: "alert", hidden: true }, errorMessage, errorHint);
  const cancel = h("button", { type: "button", class: "job-cancel", onclick: () => onCancel() }, "Cancel");
  const resultSlot = h("div", { class: "job-result-slot" });
  const stepItems = new Map(STEPS.map(([key, label]) => [key, h("li", { class: "job-step", "data-step": key, text: label })]));
  const steps = h("ol", { class: "job-steps", "aria-label": "Steps" }, [...stepItems.values()]);
  // Known from the start when the job was given a file; otherwise shown once a file stage is seen.
  stepItems.get("file").hidden = !(args?.upload || args?.employees_file);
  let reached = -1; // the furthest step seen: a step never goes back, as the job's stages do not
  const note = subtitle(args);

  const element = h(
    "section",
    { class: "job", "data-status": "pending", "data-job-id": jobId, "aria-labelledby": "job-title" },
    h(
      "header",
      { class: "view-header" },
      h("div", { class: "view-heading" }, h("h2", { class: "view-title", id: "job-title", text: "Bulk gift analysis" }), badge),
      note ? h("p", { class: "view-subtitle", text: note }) : null,
    ),
    h("div", { class: "job-progress" }, bar, steps, h("div", { class: "job-meta" }, stage, percent, eta)),
    status,
    notice,
    connection,
    error,
    h("div", { class: "job-actions" }, cancel),
    resultSlot,
  );

  let shownResult = null; // which result state the slot shows, to build the results only once

  function updateResult(state) {
    const { result } = state;
    if (state.status !== "completed" || result.status === shownResult) return;
    shownResult = result.status;
    if (result.status === "loading") {
      resultSlot.replaceChildren(h("p", { class: "results-loading", text: "Loading the results…" }));
    } else if (result.status === "failed") {
      resultSlot.replaceChildren(
        h(
          "div",
          { class: "results-error", role: "alert" },
          h("p", { text: `The results could not be loaded: ${result.message}` }),
          h("button", { type: "button", class: "results-retry", onclick: () => onRetryResult() }, "Try again"),
        ),
      );
    } else if (result.status === "ready") {
      resultSlot.replaceChildren(renderResults(result.document, { onFullscreen }));
    }
  }

  function updateSteps(state) {
    const step = stepOf(state.stage);
    if (step === "file") stepItems.get("file").hidden = false;
    const index = STEPS.findIndex(([key]) => key === step);
    if (index > reached) reached = index;
    const finished = state.status === "completed";
    STEPS.forEach(([key], position) => {
      const item = stepItems.get(key);
      const mark = finished || position < reached ? "done" : position === reached ? "current" : "todo";
      item.dataset.state = mark;
      if (mark === "current") item.setAttribute("aria-current", "step");
      else item.removeAttribute("aria-current");
    });
  }

  function update(state) {
    const terminal = state.status === "completed" || state.status === "failed" || state.status === "cancelled";
    const value = wholePercent(state.status === "completed" ? 100 : state.percentage);
    const stageText = stageLabel(state.stage);

    element.dataset.status = state.status;
    element.classList.toggle("is-cancelling", state.cancelling && !terminal);
    bar.setAttribute("aria-valuenow", String(value));
    bar.setAttribute("aria-valuetext", stageText && !terminal ? `${value}% — ${stageText}` : `${value}%`);
    fill.style.width = `${value}%`;
    setText(badge, state.cancelling && !terminal ? "Cancelling" : STATUS_WORDS[state.status] ?? state.status);
    setText(percent, `${value}%`);
    setText(stage, terminal ? STATUS_WORDS[state.status] : stageText || STATUS_WORDS[state.status]);
    setText(eta, terminal ? "" : formatEta(state.etaSeconds));
    setText(status, statusSentence(state));
    setText(notice, state.notice ?? "");
    setText(connection, state.connection);

    const failure = state.status === "failed" ? state.error ?? { message: "The job failed." } : null;
    error.hidden = failure === null;
    setText(errorMessage, failure?.message ?? "");
    setText(errorHint, failure?.hint ?? "");
    errorHint.hidden = !failure?.hint;

    cancel.disabled = terminal || state.cancelling;
    cancel.hidden = terminal;
    setText(cancel, state.cancelling && !terminal ? "Cancelling…" : "Cancel");

    updateSteps(state);
    updateResult(state);
  }

  return { element, update };
}

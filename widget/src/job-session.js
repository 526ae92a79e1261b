// Following one bulk-analysis job from the widget: poll, track, save, cancel, fetch the result.
//
// It holds no DOM. It reaches the server only through the host adapter, keeps the state a
// view renders, and calls `onChange(state)` when that state moved. Every event goes through
// the JobTracker, so what is shown obeys the job state machine whatever the answers held.

import { resultText, toolError } from "./bridge/tool-result.js";
import { createPoller, realTimers } from "./poller.js";
import { TERMINAL_STATUSES, JobTracker, eventKind } from "./tracker.js";

// A poll the host does not answer in this time counts as a failed one and is retried.
const POLL_TIMEOUT_MS = 20000;

/** The result document out of a `resources/read` answer (JSON in `text`, or base64 in `blob`). */
export function documentFromResource(readResult) {
  const first = readResult?.contents?.[0];
  if (!first) throw new Error("The result resource was empty");
  let text = first.text;
  if (typeof text !== "string" && typeof first.blob === "string") {
    const bytes = Uint8Array.from(atob(first.blob), (char) => char.charCodeAt(0));
    text = new TextDecoder().decode(bytes);
  }
  if (typeof text !== "string") throw new Error("The result resource had no text");
  return JSON.parse(text);
}

function isResultDocument(value) {
  return typeof value === "object" && value !== null && Array.isArray(value.people);
}

/** A short account of how the job ended, for the model (and for screen readers). */
export function endingSummary({ jobId, status, summaryText, error, cancelReason, document }) {
  const counts = document?.summary;
  const structured = { jobId, status };
  if (counts) {
    Object.assign(structured, {
      people: counts.people,
      withGifts: counts.withGifts,
      problems: counts.problems,
      occasion: document.occasion,
    });
  }
  let text;
  if (status === "completed") {
    const problems =
      counts?.problems === 1 ? "1 row had a problem" : counts?.problems ? `${counts.problems} rows had problems` : "no rows had problems";
    const detail =
      summaryText || (counts ? `Picked gifts for ${counts.withGifts} of ${counts.people} people; ${problems}.` : "");
    text = `Bulk gift analysis ${jobId} completed.${detail ? ` ${detail}` : ""}`;
  } else if (status === "failed") {
    structured.error = error ?? null;
    text = `Bulk gift analysis ${jobId} failed: ${error?.message ?? "unknown error"}${error?.hint ? ` (${error.hint})` : ""}`;
  } else {
    text = `Bulk gift analysis ${jobId} was cancelled${cancelReason ? `: ${cancelReason}` : "."}`;
  }
  return { text, structured };
}

/**
 * @param {object} options
 * @param {string} options.jobId
 * @param {object} options.host the host adapter (callTool, readResource, canReadResources,
 *   updateModelContext, saveState, loadState)
 * @param {(state: object) => void} [options.onChange]
 * @param {{setTimeout: Function, clearTimeout: Function}} [options.timers]
 */
export function createJobSession({ jobId, host, onChange = () => {}, timers = realTimers }) {
  const saved = host.loadState(jobId);
  // Resuming: the tracker starts where the saved snapshot left it, polling from its cursor.
  // A reloaded view gets the start tool's result again; with the same seed it lands in the
  // same place, and without one it replays every event from the first.
  const tracker = new JobTracker(jobId, saved ?? {});
  let cursor = typeof saved?.cursor === "string" ? saved.cursor : null;
  let stopped = false;
  let ended = false;
  let lastSavedJson = null;

  const state = {
    jobId,
    status: tracker.status,
    percentage: tracker.percentage,
    stage: tracker.stage,
    etaSeconds: null,
    connection: "", // empty while all is well
    cancelling: false,
    notice: "", // e.g. a cancel request that failed
    error: null, // {code, message, hint?} of a failed job
    cancelReason: null,
    resultResourceId: null,
    summaryText: null,
    result: { status: "idle", document: null, message: "" }, // idle|loading|ready|failed
  };

  function changed() {
    if (!stopped) onChange(state);
  }

  function persist() {
    const snapshot = { jobId, cursor, ...tracker.snapshot() };
    const json = JSON.stringify(snapshot);
    if (json === lastSavedJson) return;
    lastSavedJson = json;
    host.saveState(snapshot);
  }

  function take(event) {
    const kind = eventKind(event);
    if (kind === "progress") {
      state.etaSeconds = typeof event.etaSeconds === "number" ? event.etaSeconds : null;
    } else if (kind === "completed") {
      state.resultResourceId = event.resultResourceId ?? state.resultResourceId;
      state.summaryText = typeof event.summary === "string" ? event.summary : state.summaryText;
    } else if (kind === "failed") {
      state.error = event.error ?? state.error;
    } else if (kind === "cancelled") {
      state.cancelReason = typeof event.reason === "string" ? event.reason : null;
    }
  }

  async function pollOnce() {
    const args = cursor ? { jobId, cursor } : { jobId };
    const result = await host.callTool("get_job_status", args, { timeoutMs: POLL_TIMEOUT_MS });
    if (stopped) return { done: true };
    if (result.isError) throw toolError("get_job_status", result);
    const answer = result.structuredContent;
    if (typeof answer !== "object" || answer === null) throw new Error("get_job_status gave no status");

    for (const event of Array.isArray(answer.events) ? answer.events : []) {
      for (const delivered of tracker.accept(event)) take(delivered);
    }
    if (typeof answer.nextCursor === "string") cursor = answer.nextCursor;
    if (typeof answer.resultResourceId === "string") state.resultResourceId = answer.resultResourceId;
    if (answer.error && !state.error) state.error = answer.error;

    state.status = tracker.status;
    state.percentage = tracker.percentage;
    state.stage = tracker.stage;
    // The server says the job is over and will send nothing more, but its ending never reached
    // the tracker (a faulty server left a gap): show the server's word rather than poll forever.
    const serverEnded = TERMINAL_STATUSES.has(answer.status) && answer.pollAfterMs == null;
    if (serverEnded && !tracker.finished) state.status = answer.status;
    if (state.status === "completed") state.percentage = 100;
    stopCountdown();
    state.connection = "";
    persist();

    const done = tracker.finished || serverEnded;
    if (done) finish();
    else changed();
    return { done, delayMs: answer.pollAfterMs };
  }

  const poller = createPoller({
    poll: pollOnce,
    timers,
    onFailure(error, { retryInMs }) {
      // A server that answered with an error is reachable: say what it said, not that it is gone.
      const said = error?.toolResult ? resultText(error.toolResult) : "";
      showRetry(said ? `The server answered: ${said}` : "Server unreachable", Math.max(1, Math.round(retryInMs / 1000)));
    },
    onRecovery() {
      stopCountdown();
      state.connection = "";
      changed();
    },
  });

  // The retry notice counts down to the next attempt, a second at a time, so a long
  // backoff reads as waiting, not as hanging.
  let countdown = null;
  function stopCountdown() {
    if (countdown !== null) timers.clearTimeout(countdown);
    countdown = null;
  }
  function showRetry(reason, seconds) {
    stopCountdown();
    state.connection = `${reason} — retrying in ${seconds} s`;
    changed();
    if (seconds > 1) {
      countdown = timers.setTimeout(() => {
        countdown = null;
        showRetry(reason, seconds - 1);
      }, 1000);
    }
  }

  function finish() {
    if (ended) return;
    ended = true;
    state.etaSeconds = null;
    state.cancelling = false;
    if (state.status === "completed") {
      changed();
      loadResult();
    } else {
      changed();
      tellModel();
    }
  }

  async function fetchDocument() {
    if (host.canReadResources && state.resultResourceId) {
      try {
        const document = documentFromResource(await host.readResource(state.resultResourceId));
        if (isResultDocument(document)) return document;
      } catch {
        // The host could not read it after all: the app-only tool has the same document.
      }
    }
    const result = await host.callTool("get_job_result", { jobId });
    if (result.isError) throw toolError("get_job_result", result);
    if (isResultDocument(result.structuredContent)) return result.structuredContent;
    throw new Error(resultText(result) || "get_job_result gave no result document");
  }

  async function loadResult() {
    if (stopped || state.result.status === "loading") return;
    state.result = { status: "loading", document: null, message: "" };
    changed();
    try {
      const document = await fetchDocument();
      if (stopped) return;
      state.result = { status: "ready", document, message: "" };
      changed();
      tellModel();
    } catch (error) {
      if (stopped) return;
      state.result = { status: "failed", document: null, message: String(error?.message ?? error) };
      changed();
    }
  }

  let toldModel = false;
  function tellModel() {
    if (toldModel || stopped) return;
    toldModel = true;
    const { text, structured } = endingSummary({ ...state, document: state.result.document });
    Promise.resolve()
      .then(() => host.updateModelContext(text, structured))
      .catch(() => {
        // A host that does not take model context: the view still shows everything.
      });
  }

  return {
    get state() {
      return state;
    },
    get tracker() {
      return tracker;
    },
    start() {
      changed();
      poller.start();
    },
    /** Stops polling and every later change (teardown, or another result replaced this job). */
    stop() {
      stopped = true;
      stopCountdown();
      poller.stop();
    },
    /** The file never reached the server: stop the job that waits for it, and say why. */
    async abandon(message) {
      await this.cancel();
      if (stopped) return;
      state.notice = message;
      changed();
    },
    async cancel() {
      if (ended || stopped || state.cancelling) return;
      state.cancelling = true;
      state.notice = "";
      changed();
      try {
        const result = await host.callTool("cancel_job", { jobId });
        if (result.isError) throw toolError("cancel_job", result);
        poller.pollNow(); // hear the cancelled event now rather than after the next wait
      } catch (error) {
        if (stopped || ended) return;
        state.cancelling = false;
        state.notice = `Could not cancel the job: ${String(error?.message ?? error)}`;
        changed();
      }
    },
    /** Tries fetching the result document again after it failed. */
    retryResult() {
      if (state.status === "completed" && state.result.status === "failed") loadResult();
    },
  };
}

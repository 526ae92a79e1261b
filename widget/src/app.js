// The widget's one code path, whichever host it runs in: host events in, a view out.
//
// `main.js` picks the host adapter; this module reacts to its events (tool input, tool
// result, cancellation, teardown) by choosing the view and, for a bulk job, running a
// JobSession whose state the job view renders.

import { createJobSession } from "./job-session.js";
import { routeToolResult, waitingMessage } from "./route.js";
import { startAnalysis } from "./uploader.js";
import { createFormView } from "./views/form.js";
import { renderGiftView } from "./views/gifts.js";
import { createJobView } from "./views/job.js";
import { renderToolError, renderWaiting } from "./views/simple.js";

/** Marks a moment for the benchmark; a missing Performance API is no reason to fail. */
function mark(name) {
  try {
    globalThis.performance?.mark?.(name);
  } catch {
    // ignore
  }
}

/** After the next paint: a frame callback, then a task once that frame is on screen. */
function afterPaint(callback) {
  const frame = globalThis.requestAnimationFrame ?? ((fn) => setTimeout(fn, 16));
  frame(() => setTimeout(callback, 0));
}

/**
 * @param {object} options
 * @param {HTMLElement} options.root the <main id="app"> element
 */
export function createApp({ root }) {
  let host = null;
  let toolInput = null;
  let session = null; // the JobSession being followed, if any
  let hasResult = false;
  let torndown = false;

  function show(view, content) {
    root.dataset.view = view;
    root.replaceChildren(content);
  }

  function stopSession() {
    session?.stop();
    session = null;
  }

  function toolName() {
    return host?.hostContext?.toolInfo?.tool?.name ?? null;
  }

  function showForm(form) {
    const view = createFormView({
      form,
      async onStart({ file, settings }) {
        try {
          const { jobId, sent } = await startAnalysis({ host, file, settings, onStage: (stage) => view.showBusy(stage) });
          if (torndown) return;
          toolInput = { ...settings, upload: { size: file.size } }; // what the job view shows was asked
          showJob(jobId);
          const following = session;
          sent.catch((error) => following?.abandon(String(error?.message ?? error)));
        } catch (error) {
          view.showProblem(String(error?.message ?? error));
        }
      },
    });
    show("form", view.element);
  }

  function showJob(jobId) {
    if (session?.state.jobId === jobId) return; // the same job again (a reload, a repeat): keep following it
    stopSession();
    const view = createJobView({
      jobId,
      args: toolInput,
      onCancel: () => current.cancel(),
      onRetryResult: () => current.retryResult(),
      onFullscreen: host?.canFullscreen ? () => host.requestFullscreen().catch(() => {}) : null,
    });
    const current = createJobSession({ jobId, host, onChange: (state) => view.update(state) });
    session = current;
    show("job", view.element);
    current.start();
  }

  return {
    /** The host is known: remember it; nothing is shown until it speaks. */
    attach(adapter) {
      host = adapter;
      if (!hasResult) show("waiting", renderWaiting(waitingMessage(toolName(), toolInput)));
    },

    /** No host has answered yet. */
    waitForHost() {
      if (!host) show("waiting", renderWaiting("Waiting for the host…"));
    },

    toolInput(args) {
      // Some hosts echo the view's own tools/call as tool-input/tool-result notifications
      // (the spec's interactive phase allows it); after the first result those are not ours.
      if (hasResult) return;
      toolInput = args ?? null;
      if (!hasResult && host) show("waiting", renderWaiting(waitingMessage(toolName(), toolInput)));
    },

    toolResult(result) {
      if (torndown) return;
      mark("giftgenius:tool-result");
      const route = routeToolResult(result);
      // An echo of a call the view made itself (cancel_job's text, get_job_result's document,
      // a failed poll) must not replace what is shown; only a new gift list or job may.
      if (hasResult && route.view === "error") return;
      hasResult = true;
      if (route.view === "job") {
        showJob(route.jobId);
        return;
      }
      stopSession();
      if (route.view === "form") {
        showForm(route.form);
      } else if (route.view === "gifts") {
        show("gifts", renderGiftView(route.gifts, toolInput, route.notice));
        afterPaint(() => mark("giftgenius:cards-drawn"));
      } else {
        show("error", renderToolError(route.message));
      }
    },

    toolCancelled({ reason }) {
      if (hasResult || torndown) return; // the call already answered; what is shown stands
      const message = reason ? `The request was cancelled: ${reason}` : "The request was cancelled.";
      show("error", renderToolError(message, "Cancelled"));
    },

    /** The host is about to remove the view: stop every poll and timer now. */
    teardown() {
      torndown = true;
      stopSession();
    },

    get session() {
      return session;
    },
  };
}

// Polling with the server's pace while it answers, and exponential backoff while it does not.
//
// The poller knows nothing about jobs: it calls `poll()` and reads back `{done, delayMs}`.
// It never runs two polls at once, and once stopped it ignores whatever an in-flight poll
// brings back, so a torn-down widget makes no further calls. Timers are injected, so tests
// drive time by hand.

export const BACKOFF = Object.freeze({ initialMs: 1000, factor: 2, maxMs: 15000 });

/** How long to wait after `failures` failed polls in a row: 1 s, 2 s, 4 s, … up to the cap. */
export function backoffDelay(failures, { initialMs, factor, maxMs } = BACKOFF) {
  if (!(failures >= 1)) return 0;
  return Math.min(maxMs, initialMs * factor ** (failures - 1));
}

/** A server's `pollAfterMs` made safe to wait on; `fallbackMs` when it gave none. */
export function paceDelay(pollAfterMs, fallbackMs = 1000, maxMs = 60000) {
  if (typeof pollAfterMs !== "number" || !Number.isFinite(pollAfterMs)) return fallbackMs;
  return Math.min(maxMs, Math.max(0, pollAfterMs));
}

export const realTimers = Object.freeze({
  setTimeout: (callback, ms) => globalThis.setTimeout(callback, ms),
  clearTimeout: (handle) => globalThis.clearTimeout(handle),
});

/**
 * @param {object} options
 * @param {() => Promise<{done?: boolean, delayMs?: number|null}>} options.poll one round trip
 * @param {(error: unknown, retry: {failures: number, retryInMs: number}) => void} [options.onFailure]
 * @param {() => void} [options.onRecovery] called on the first success after failures
 * @param {{setTimeout: Function, clearTimeout: Function}} [options.timers]
 * @param {typeof BACKOFF} [options.backoff]
 * @param {number} [options.fallbackDelayMs] the wait when an answer names none
 */
export function createPoller({
  poll,
  onFailure = () => {},
  onRecovery = () => {},
  timers = realTimers,
  backoff = BACKOFF,
  fallbackDelayMs = 1000,
}) {
  let active = false;
  let timer = null;
  let inFlight = false;
  let nudged = false; // pollNow() was asked while a poll was in flight
  let failures = 0;

  function schedule(ms) {
    if (timer !== null) timers.clearTimeout(timer);
    timer = timers.setTimeout(run, ms);
  }

  async function run() {
    timer = null;
    if (!active || inFlight) return;
    inFlight = true;
    nudged = false;
    let outcome;
    let error;
    let failed = false;
    try {
      outcome = await poll();
    } catch (caught) {
      failed = true;
      error = caught;
    }
    inFlight = false;
    if (!active) return;
    if (failed) {
      failures += 1;
      const retryInMs = backoffDelay(failures, backoff);
      schedule(retryInMs);
      onFailure(error, { failures, retryInMs });
      return;
    }
    if (failures > 0) {
      failures = 0;
      onRecovery();
    }
    if (outcome?.done) {
      active = false;
      return;
    }
    schedule(nudged ? 0 : paceDelay(outcome?.delayMs, fallbackDelayMs));
  }

  return {
    /** Polls at once, then keeps going until an answer is `done` or `stop()`. */
    start() {
      if (active) return;
      active = true;
      schedule(0);
    },
    /** Stops for good: cancels the pending timer; an in-flight answer is ignored. */
    stop() {
      active = false;
      if (timer !== null) timers.clearTimeout(timer);
      timer = null;
    },
    /** Polls now instead of waiting out the current delay (e.g. right after a cancel request). */
    pollNow() {
      if (!active) return;
      if (inFlight) nudged = true;
      else schedule(0);
    },
    get active() {
      return active;
    },
    get failures() {
      return failures;
    },
  };
}

// Following one job's events exactly once, in order, whatever polling did to them.
//
// The widget sees a job's events through `get_job_status` answers. A retried poll can bring
// events again, a faulty host or server could reorder them, and a reloaded widget starts
// over from a saved cursor. The tracker is the one place that turns all of that into the
// job's history. It keeps the rules of the server's own client tracker
// (herald/client/tracking.py and herald/jobs/machine.py), so the widget can never show
// progress after an ending, a second ending, or progress going backwards.
//
// It does no I/O and touches no DOM, so its rules are tested on their own.

export const TERMINAL_STATUSES = new Set(["completed", "failed", "cancelled"]);
const STATUSES = new Set(["pending", "running", ...TERMINAL_STATUSES]);

// The state-machine input each event kind stands for; `created` is the job's birth, not an input.
const INPUT_OF_KIND = {
  started: "start",
  progress: "progress",
  completed: "complete",
  failed: "fail",
  cancelled: "cancel",
};

// status -> input -> [outcome, next status]. A pair that is missing is refused.
// Terminal states absorb a repeat of the input that ended them and refuse everything else.
const TRANSITIONS = {
  pending: { start: ["move", "running"], fail: ["move", "failed"], cancel: ["move", "cancelled"] },
  running: {
    progress: ["move", "running"],
    complete: ["move", "completed"],
    fail: ["move", "failed"],
    cancel: ["move", "cancelled"],
  },
  completed: { complete: ["absorb", "completed"] },
  failed: { fail: ["absorb", "failed"] },
  cancelled: { cancel: ["absorb", "cancelled"] },
};

/** Splits `"<jobId>:<sequence>"`; null when the id is not of that form. Job ids may contain ":". */
export function parseEventId(eventId) {
  if (typeof eventId !== "string") return null;
  const colon = eventId.lastIndexOf(":");
  const digits = eventId.slice(colon + 1);
  if (colon <= 0 || !/^[0-9]+$/.test(digits)) return null;
  const sequence = Number(digits);
  return sequence >= 1 && Number.isSafeInteger(sequence) ? { jobId: eventId.slice(0, colon), sequence } : null;
}

/** The kind of an event, from its `type` ("job.progress" -> "progress"). */
export function eventKind(event) {
  const type = typeof event?.type === "string" ? event.type : "";
  return type.startsWith("job.") ? type.slice(4) : type;
}

/**
 * Turns the events of one job, in any order and with repeats, into its history.
 *
 * `accept(event)` returns the events that became deliverable, in sequence order. Sequences
 * count from 1 per job with no gaps, which is what lets the tracker tell "not yet" (a gap:
 * hold the event) from "already" (at or below `lastSequence`: drop it).
 */
export class JobTracker {
  /**
   * @param {string} jobId
   * @param {{status?: string, percentage?: number, stage?: string|null, lastSequence?: number}} [seed]
   *   where to resume from: a saved status snapshot and the last sequence it had settled.
   */
  constructor(jobId, seed = {}) {
    this.jobId = jobId;
    /** @type {{event: object, reason: string}[]} events that were never delivered, and why */
    this.rejected = [];
    const status = STATUSES.has(seed.status) ? seed.status : "pending";
    const p = seed.percentage;
    const percentage = typeof p === "number" && p >= 0 && p <= 100 ? p : 0;
    this._state = {
      status,
      percentage: status === "completed" ? 100 : percentage,
      stage: typeof seed.stage === "string" ? seed.stage : null,
    };
    const last = Number.isSafeInteger(seed.lastSequence) && seed.lastSequence > 0 ? seed.lastSequence : 0;
    this._next = last + 1;
    this._held = new Map();
  }

  /** The highest sequence settled in order (delivered or rejected); 0 before any. */
  get lastSequence() {
    return this._next - 1;
  }

  /** Whether the job has ended; nothing is delivered after that. */
  get finished() {
    return TERMINAL_STATUSES.has(this._state.status);
  }

  get status() {
    return this._state.status;
  }

  get percentage() {
    return this._state.percentage;
  }

  get stage() {
    return this._state.stage;
  }

  /** How many events are held for an earlier one that has not arrived yet. */
  get waiting() {
    return this._held.size;
  }

  /** What to save to resume later: feed it back to the constructor. */
  snapshot() {
    return { ...this._state, lastSequence: this.lastSequence };
  }

  /** Takes one event as listed by get_job_status; returns the events that are now deliverable. */
  accept(event) {
    const id = parseEventId(event?.eventId);
    if (id === null) {
      this.rejected.push({ event, reason: "not a job event: it has no eventId of the form <jobId>:<sequence>" });
      return [];
    }
    if (id.jobId !== this.jobId) {
      this.rejected.push({ event, reason: `it belongs to job ${JSON.stringify(id.jobId)}` });
      return [];
    }
    if (event.jobId !== undefined && event.jobId !== id.jobId) {
      this.rejected.push({ event, reason: `its jobId ${JSON.stringify(event.jobId)} does not match its eventId` });
      return [];
    }
    if (id.sequence < this._next || this._held.has(id.sequence)) return []; // a repeat: the first copy counts
    this._held.set(id.sequence, event);
    const delivered = [];
    for (let ready = this._held.get(this._next); ready !== undefined; ready = this._held.get(this._next)) {
      this._held.delete(this._next);
      const sequence = this._next;
      this._next += 1;
      const reason = this._refusal(ready, sequence);
      if (reason === null) delivered.push(ready);
      else this.rejected.push({ event: ready, reason });
    }
    return delivered;
  }

  // Why `event` cannot follow what was delivered (null if it can); moves the state if it can.
  _refusal(event, sequence) {
    const kind = eventKind(event);
    if (this.finished) {
      const ended = this._state.status;
      if (INPUT_OF_KIND[kind] && TRANSITIONS[ended][INPUT_OF_KIND[kind]]?.[0] === "absorb") {
        return `a second ${kind} event: absorbed, the job already ended ${ended}`;
      }
      if (TERMINAL_STATUSES.has(kind)) return `a second terminal event: the job already ended ${ended}`;
      return `the job already ended ${ended}; ${kind || "an event without a type"} cannot follow`;
    }
    if (kind === "created") return sequence === 1 ? null : "a job is created only once, as its first event";
    const input = INPUT_OF_KIND[kind];
    if (input === undefined) return `unknown event kind ${JSON.stringify(kind)}`;
    const transition = TRANSITIONS[this._state.status][input];
    if (transition === undefined) return `a ${this._state.status} job cannot take ${input}`;
    const [, next] = transition;
    if (input === "progress") {
      const { percentage, stage } = event;
      if (typeof percentage !== "number" || !(percentage >= 0 && percentage <= 100)) {
        return `progress must be a percentage from 0 to 100, not ${JSON.stringify(percentage)}`;
      }
      if (percentage < this._state.percentage) {
        return `progress cannot go back from ${this._state.percentage}% to ${percentage}%`;
      }
      this._state = { ...this._state, percentage, stage: typeof stage === "string" && stage ? stage : this._state.stage };
    } else if (input === "complete") {
      this._state = { ...this._state, status: next, percentage: 100 };
    } else {
      this._state = { ...this._state, status: next };
    }
    return null;
  }
}

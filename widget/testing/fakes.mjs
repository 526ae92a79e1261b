// Test doubles shared by widget/test/*.test.mjs. (Kept outside test/, where node --test
// would run any module as a test file.)

/** Lets every pending promise callback run. */
export function flush() {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Timers on a virtual clock: nothing runs until `advance` moves time past it. */
export function fakeTimers() {
  let now = 0;
  let nextHandle = 1;
  const due = new Map(); // handle -> {at, callback}
  return {
    setTimeout(callback, ms = 0) {
      const handle = nextHandle++;
      due.set(handle, { at: now + Math.max(0, ms), callback });
      return handle;
    },
    clearTimeout(handle) {
      due.delete(handle);
    },
    get now() {
      return now;
    },
    /** Delays of the timers waiting now, from now, soonest first. */
    get pending() {
      return [...due.values()].map((timer) => timer.at - now).sort((a, b) => a - b);
    },
    /** Moves the clock by `ms`, running what falls due in order and letting promises settle. */
    async advance(ms) {
      const end = now + ms;
      await flush();
      for (;;) {
        let soonest = null;
        for (const [handle, timer] of due) {
          if (timer.at <= end && (soonest === null || timer.at < soonest[1].at)) soonest = [handle, timer];
        }
        if (soonest === null) break;
        due.delete(soonest[0]);
        now = soonest[1].at;
        soonest[1].callback();
        await flush();
      }
      now = end;
      await flush();
    },
  };
}

/** A window inside a frame (or not), with a parent that records what it is sent. */
export function fakeWindow({ framed = true, openai, timers = fakeTimers() } = {}) {
  const listeners = new Map();
  const parent = {
    sent: [],
    postMessage(message, targetOrigin) {
      this.sent.push({ message: structuredClone(message), targetOrigin });
    },
  };
  const window = {
    openai,
    timers,
    setTimeout: (callback, ms) => timers.setTimeout(callback, ms),
    clearTimeout: (handle) => timers.clearTimeout(handle),
    addEventListener(type, listener) {
      listeners.set(type, [...(listeners.get(type) ?? []), listener]);
    },
    removeEventListener(type, listener) {
      listeners.set(
        type,
        (listeners.get(type) ?? []).filter((candidate) => candidate !== listener),
      );
    },
    dispatch(type, event) {
      for (const listener of listeners.get(type) ?? []) listener(event);
    },
    /** A message from the host (or, with `source`, from somewhere else). */
    receive(data, source = parent) {
      window.dispatch("message", { source, data });
    },
    listenerCount(type) {
      return (listeners.get(type) ?? []).length;
    },
    parent: null,
  };
  window.parent = framed ? parent : window;
  window.host = parent;
  return window;
}

/** A status answer of get_job_status, as the server shapes it. */
export function statusAnswer(jobId, { status = "running", percentage = 0, stage = null, events = [], cursor = "c", pollAfterMs = 500, ...extra } = {}) {
  return {
    content: [{ type: "text", text: `Job ${jobId} is ${status}.` }],
    isError: false,
    structuredContent: {
      jobId,
      status,
      percentage,
      stage,
      events,
      nextCursor: cursor,
      pollAfterMs: ["completed", "failed", "cancelled"].includes(status) ? null : pollAfterMs,
      ...extra,
    },
  };
}

/** One job event, as listed by get_job_status. */
export function jobEvent(jobId, sequence, kind, payload = {}) {
  return {
    eventId: `${jobId}:${sequence}`,
    type: `job.${kind}`,
    jobId,
    timestamp: `2026-01-26T10:00:${String(sequence % 60).padStart(2, "0")}.000Z`,
    ...payload,
  };
}

/** A small result document of a bulk analysis with `count` people. */
export function resultDocument(count = 3) {
  const departments = ["Sales", "Engineering", "Design"];
  const people = Array.from({ length: count }, (_, index) => ({
    name: `Person ${index + 1}`,
    department: departments[index % departments.length],
    interests: index % 2 ? ["coffee", "hiking"] : ["books"],
    budget: null,
    gifts: index % 5 === 4 ? [] : [{ name: index % 2 ? "Pour-over kit" : "Reading lamp", price: 24.99, category: "home", reason: "fits" }],
    note: index % 5 === 4 ? "Nothing fits the budget." : null,
  }));
  const withGifts = people.filter((person) => person.gifts.length).length;
  return {
    occasion: "holiday",
    budgetPerPerson: 50,
    people,
    problems: [{ row: 7, reason: "no interests" }],
    summary: { people: count, withGifts, problems: 1, departments: {}, topInterests: [] },
  };
}

/**
 * A host adapter that answers get_job_status from a script of answers (one per poll; the
 * last repeats), records every call, and keeps saved state in a Map.
 */
export function fakeHost({ answers = [], canReadResources = true, document = resultDocument(), store = new Map() } = {}) {
  const calls = [];
  const contexts = [];
  let polls = 0;
  return {
    kind: "fake",
    canReadResources,
    calls,
    contexts,
    store,
    answers,
    async callTool(name, args) {
      calls.push({ name, args });
      if (name === "get_job_status") {
        const answer = answers[Math.min(polls, answers.length - 1)];
        polls += 1;
        if (answer instanceof Error) throw answer;
        return typeof answer === "function" ? answer(args) : answer;
      }
      if (name === "get_job_result") return { content: [], isError: false, structuredContent: document };
      if (name === "cancel_job") return { content: [{ type: "text", text: "being cancelled" }], isError: false };
      throw new Error(`unexpected tool ${name}`);
    },
    async readResource(uri) {
      calls.push({ name: "resources/read", args: { uri } });
      return { contents: [{ uri, mimeType: "application/json", text: JSON.stringify(document) }] };
    },
    async updateModelContext(text, structured) {
      contexts.push({ text, structured });
    },
    saveState(state) {
      store.set(state.jobId, structuredClone(state));
    },
    loadState(jobId) {
      return store.has(jobId) ? structuredClone(store.get(jobId)) : null;
    },
  };
}

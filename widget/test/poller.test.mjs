import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { backoffDelay, createPoller, paceDelay } from "../src/poller.js";
import { fakeTimers } from "../testing/fakes.mjs";

describe("backoffDelay", () => {
  test("doubles from 1 s up to the 15 s cap", () => {
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6, 20].map((failures) => backoffDelay(failures)),
      [1000, 2000, 4000, 8000, 15000, 15000, 15000],
    );
  });

  test("is zero before any failure", () => {
    assert.equal(backoffDelay(0), 0);
  });
});

describe("paceDelay", () => {
  test("uses the server's pollAfterMs, clamped", () => {
    assert.equal(paceDelay(500), 500);
    assert.equal(paceDelay(-5), 0);
    assert.equal(paceDelay(10 ** 9), 60000);
  });

  test("falls back when the server named none", () => {
    assert.equal(paceDelay(null, 750), 750);
    assert.equal(paceDelay(undefined), 1000);
  });
});

/** A poller over a scripted list of outcomes (Error instances throw); records poll times. */
function scripted(outcomes, extra = {}) {
  const timers = fakeTimers();
  const times = [];
  const failures = [];
  let recoveries = 0;
  let index = 0;
  const poller = createPoller({
    timers,
    poll: async () => {
      times.push(timers.now);
      const outcome = outcomes[Math.min(index++, outcomes.length - 1)];
      if (outcome instanceof Error) throw outcome;
      return outcome;
    },
    onFailure: (error, retry) => failures.push({ message: error.message, ...retry }),
    onRecovery: () => {
      recoveries += 1;
    },
    ...extra,
  });
  return { timers, times, failures, poller, recoveries: () => recoveries };
}

describe("createPoller", () => {
  test("polls at once, then waits what each answer says, and stops when done", async () => {
    const { timers, times, poller } = scripted([{ delayMs: 500 }, { delayMs: 300 }, { done: true }]);
    poller.start();
    await timers.advance(10000);
    assert.deepEqual(times, [0, 500, 800]);
    assert.equal(poller.active, false);
    assert.deepEqual(timers.pending, []);
  });

  test("backs off exponentially while polls fail, then returns to the server's pace", async () => {
    const down = new Error("unreachable");
    const { timers, times, failures, poller, recoveries } = scripted([
      down,
      down,
      down,
      { delayMs: 500 },
      { done: true },
    ]);
    poller.start();
    await timers.advance(60000);
    assert.deepEqual(times, [0, 1000, 3000, 7000, 7500]);
    assert.deepEqual(
      failures.map((failure) => [failure.failures, failure.retryInMs]),
      [[1, 1000], [2, 2000], [3, 4000]],
    );
    assert.equal(failures[0].message, "unreachable");
    assert.equal(recoveries(), 1);
  });

  test("caps the backoff", async () => {
    const { timers, failures, poller } = scripted([new Error("down")]);
    poller.start();
    await timers.advance(120000);
    assert.ok(failures.length >= 6);
    assert.equal(Math.max(...failures.map((failure) => failure.retryInMs)), 15000);
    poller.stop();
  });

  test("stop() cancels the wait and ignores an answer still on its way", async () => {
    const timers = fakeTimers();
    let release;
    let polls = 0;
    const poller = createPoller({
      timers,
      poll: () => {
        polls += 1;
        return new Promise((resolve) => {
          release = resolve;
        });
      },
    });
    poller.start();
    await timers.advance(0);
    assert.equal(polls, 1);
    poller.stop();
    release({ delayMs: 100 });
    await timers.advance(5000);
    assert.equal(polls, 1);
    assert.deepEqual(timers.pending, []);
  });

  test("never runs two polls at once", async () => {
    const timers = fakeTimers();
    let inFlight = 0;
    let most = 0;
    const poller = createPoller({
      timers,
      poll: async () => {
        inFlight += 1;
        most = Math.max(most, inFlight);
        await new Promise((resolve) => timers.setTimeout(resolve, 700));
        inFlight -= 1;
        return { delayMs: 0 };
      },
    });
    poller.start();
    await timers.advance(100);
    poller.pollNow();
    poller.pollNow();
    await timers.advance(3000);
    poller.stop();
    assert.equal(most, 1);
  });

  test("pollNow() skips the rest of the wait", async () => {
    const { timers, times, poller } = scripted([{ delayMs: 5000 }]);
    poller.start();
    await timers.advance(1000);
    poller.pollNow();
    await timers.advance(0);
    assert.deepEqual(times, [0, 1000]);
    poller.stop();
  });
});

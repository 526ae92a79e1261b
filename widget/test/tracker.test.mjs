import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { JobTracker, parseEventId } from "../src/tracker.js";
import { jobEvent } from "../testing/fakes.mjs";

const JOB = "job-1";
const ev = (sequence, kind, payload) => jobEvent(JOB, sequence, kind, payload);
const ids = (events) => events.map((event) => event.eventId);

// The life of a job that ends well, as the server sends it.
const HISTORY = [
  ev(1, "created", { tool: "start_bulk_gift_analysis", status: "pending" }),
  ev(2, "started", { status: "running" }),
  ev(3, "progress", { percentage: 10, stage: "parse" }),
  ev(4, "progress", { percentage: 55.5, stage: "match", etaSeconds: 12 }),
  ev(5, "completed", { status: "completed", resultResourceId: "herald://jobs/job-1/result.json" }),
];

describe("parseEventId", () => {
  test("splits at the last colon, so job ids may contain colons", () => {
    assert.deepEqual(parseEventId("a:b:12"), { jobId: "a:b", sequence: 12 });
  });

  test("refuses ids without a positive integer sequence", () => {
    for (const bad of ["job", "job:", ":3", "job:0", "job:-1", "job:1.5", "job:x", 7, null]) {
      assert.equal(parseEventId(bad), null, String(bad));
    }
  });
});

describe("JobTracker", () => {
  test("delivers a whole history in order and ends completed at 100%", () => {
    const tracker = new JobTracker(JOB);
    const delivered = HISTORY.flatMap((event) => tracker.accept(event));
    assert.deepEqual(ids(delivered), ids(HISTORY));
    assert.equal(tracker.status, "completed");
    assert.equal(tracker.percentage, 100);
    assert.equal(tracker.stage, "match");
    assert.equal(tracker.lastSequence, 5);
    assert.equal(tracker.finished, true);
    assert.deepEqual(tracker.rejected, []);
  });

  test("drops repeats silently: the first copy counts", () => {
    const tracker = new JobTracker(JOB);
    tracker.accept(HISTORY[0]);
    tracker.accept(HISTORY[1]);
    assert.deepEqual(tracker.accept(HISTORY[1]), []);
    assert.deepEqual(tracker.accept({ ...HISTORY[0], tool: "other" }), []);
    assert.deepEqual(tracker.rejected, []);
    assert.equal(tracker.lastSequence, 2);
  });

  test("holds an early event until the gap before it closes", () => {
    const tracker = new JobTracker(JOB);
    assert.deepEqual(tracker.accept(HISTORY[2]), []);
    assert.deepEqual(tracker.accept(HISTORY[3]), []);
    assert.equal(tracker.waiting, 2);
    assert.deepEqual(tracker.accept(HISTORY[3]), [], "a held event is not taken twice");
    assert.deepEqual(ids(tracker.accept(HISTORY[0])), ["job-1:1"]);
    assert.equal(tracker.status, "pending", "still waiting for sequence 2");
    assert.deepEqual(ids(tracker.accept(HISTORY[1])), ["job-1:2", "job-1:3", "job-1:4"]);
    assert.equal(tracker.waiting, 0);
    assert.equal(tracker.percentage, 55.5);
  });

  test("rejects events of another job, with the reason", () => {
    const tracker = new JobTracker(JOB);
    assert.deepEqual(tracker.accept(jobEvent("job-2", 1, "created")), []);
    assert.equal(tracker.rejected.length, 1);
    assert.match(tracker.rejected[0].reason, /belongs to job "job-2"/);
    assert.equal(tracker.lastSequence, 0);
  });

  test("rejects an event whose jobId disagrees with its eventId", () => {
    const tracker = new JobTracker(JOB);
    assert.deepEqual(tracker.accept({ ...HISTORY[0], jobId: "job-9" }), []);
    assert.match(tracker.rejected[0].reason, /does not match/);
  });

  test("rejects what is not an event at all", () => {
    const tracker = new JobTracker(JOB);
    assert.deepEqual(tracker.accept({ type: "job.started" }), []);
    assert.deepEqual(tracker.accept(null), []);
    assert.equal(tracker.rejected.length, 2);
    assert.match(tracker.rejected[0].reason, /not a job event/);
  });

  test("never lets progress go backwards", () => {
    const tracker = new JobTracker(JOB);
    HISTORY.slice(0, 4).forEach((event) => tracker.accept(event));
    assert.deepEqual(tracker.accept(ev(5, "progress", { percentage: 40, stage: "extract" })), []);
    assert.equal(tracker.percentage, 55.5);
    assert.equal(tracker.stage, "match");
    assert.match(tracker.rejected.at(-1).reason, /cannot go back from 55.5% to 40%/);
    assert.equal(tracker.lastSequence, 5, "a rejected event still settles its sequence");
    assert.equal(tracker.accept(ev(6, "progress", { percentage: 55.5, stage: "write" })).length, 1, "equal is fine");
    assert.equal(tracker.stage, "write");
  });

  test("refuses percentages outside 0..100 or not numbers", () => {
    const tracker = new JobTracker(JOB, { status: "running", lastSequence: 2 });
    for (const [sequence, percentage] of [[3, 101], [4, -1], [5, "50"], [6, Number.NaN]]) {
      assert.deepEqual(tracker.accept(ev(sequence, "progress", { percentage, stage: "x" })), []);
    }
    assert.equal(tracker.rejected.length, 4);
    assert.equal(tracker.percentage, 0);
  });

  test("keeps the stage when a progress event has none", () => {
    const tracker = new JobTracker(JOB, { status: "running", stage: "parse", lastSequence: 2 });
    tracker.accept(ev(3, "progress", { percentage: 5 }));
    assert.equal(tracker.stage, "parse");
  });

  test("refuses progress and completion before the job started", () => {
    const tracker = new JobTracker(JOB);
    tracker.accept(HISTORY[0]);
    assert.deepEqual(tracker.accept(ev(2, "progress", { percentage: 5, stage: "parse" })), []);
    assert.deepEqual(tracker.accept(ev(3, "completed", { resultResourceId: "x" })), []);
    assert.equal(tracker.status, "pending");
    assert.match(tracker.rejected[0].reason, /a pending job cannot take progress/);
    assert.match(tracker.rejected[1].reason, /a pending job cannot take complete/);
  });

  test("lets a pending job fail or be cancelled", () => {
    for (const kind of ["failed", "cancelled"]) {
      const tracker = new JobTracker(JOB);
      tracker.accept(HISTORY[0]);
      assert.equal(tracker.accept(ev(2, kind, { status: kind })).length, 1);
      assert.equal(tracker.status, kind);
      assert.equal(tracker.finished, true);
    }
  });

  test("refuses a second start", () => {
    const tracker = new JobTracker(JOB);
    HISTORY.slice(0, 2).forEach((event) => tracker.accept(event));
    assert.deepEqual(tracker.accept(ev(3, "started")), []);
    assert.match(tracker.rejected[0].reason, /a running job cannot take start/);
  });

  test("absorbs a repeated ending and rejects anything else after the end", () => {
    const tracker = new JobTracker(JOB);
    HISTORY.forEach((event) => tracker.accept(event));
    assert.deepEqual(tracker.accept(ev(6, "completed", { resultResourceId: "other" })), []);
    assert.deepEqual(tracker.accept(ev(7, "failed", { error: { code: "x", message: "late" } })), []);
    assert.deepEqual(tracker.accept(ev(8, "progress", { percentage: 100, stage: "write" })), []);
    assert.deepEqual(
      tracker.rejected.map((rejected) => rejected.reason),
      [
        "a second completed event: absorbed, the job already ended completed",
        "a second terminal event: the job already ended completed",
        "the job already ended completed; progress cannot follow",
      ],
    );
    assert.equal(tracker.status, "completed");
    assert.equal(tracker.percentage, 100);
  });

  test("accepts created only as the first event", () => {
    const tracker = new JobTracker(JOB);
    HISTORY.slice(0, 2).forEach((event) => tracker.accept(event));
    assert.deepEqual(tracker.accept(ev(3, "created")), []);
    assert.match(tracker.rejected[0].reason, /created only once/);
  });

  test("rejects unknown kinds", () => {
    const tracker = new JobTracker(JOB);
    tracker.accept(HISTORY[0]);
    assert.deepEqual(tracker.accept(ev(2, "paused")), []);
    assert.match(tracker.rejected[0].reason, /unknown event kind "paused"/);
  });

  test("resumes from a snapshot: earlier sequences are repeats, the rules hold", () => {
    const first = new JobTracker(JOB);
    HISTORY.slice(0, 4).forEach((event) => first.accept(event));
    const resumed = new JobTracker(JOB, first.snapshot());
    assert.deepEqual(resumed.snapshot(), first.snapshot());
    assert.deepEqual(HISTORY.slice(0, 4).flatMap((event) => resumed.accept(event)), [], "already settled");
    assert.deepEqual(resumed.accept(ev(5, "progress", { percentage: 20, stage: "extract" })), []);
    assert.equal(resumed.percentage, 55.5, "the seed's percentage is the floor");
    assert.equal(resumed.accept(ev(6, "completed", { resultResourceId: "r" })).length, 1);
    assert.equal(resumed.status, "completed");
  });

  test("a snapshot of a finished job delivers nothing more", () => {
    const tracker = new JobTracker(JOB, { status: "cancelled", percentage: 30, lastSequence: 4 });
    assert.equal(tracker.finished, true);
    assert.deepEqual(tracker.accept(ev(5, "progress", { percentage: 40, stage: "x" })), []);
    assert.equal(tracker.percentage, 30);
  });

  test("ignores a seed it cannot trust", () => {
    const tracker = new JobTracker(JOB, { status: "sleeping", percentage: 500, lastSequence: -3 });
    assert.equal(tracker.status, "pending");
    assert.equal(tracker.percentage, 0);
    assert.equal(tracker.lastSequence, 0);
  });

  test("follows the state machine's table for every status and event kind", () => {
    // Mirrors herald/jobs/machine.py: which kinds each status accepts.
    const accepted = {
      pending: ["started", "failed", "cancelled"],
      running: ["progress", "completed", "failed", "cancelled"],
      completed: [],
      failed: [],
      cancelled: [],
    };
    const kinds = ["started", "progress", "completed", "failed", "cancelled"];
    for (const [status, allowed] of Object.entries(accepted)) {
      for (const kind of kinds) {
        const tracker = new JobTracker(JOB, { status, percentage: 10, lastSequence: 3 });
        const delivered = tracker.accept(ev(4, kind, { percentage: 20, stage: "s", status: kind }));
        assert.equal(delivered.length === 1, allowed.includes(kind), `${status} + ${kind}`);
      }
    }
  });
});

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createJobSession, documentFromResource, endingSummary } from "../src/job-session.js";
import { fakeHost, fakeTimers, jobEvent, resultDocument, statusAnswer } from "../testing/fakes.mjs";

const JOB = "job-7";
const RESULT_URI = `herald://jobs/${JOB}/result.json`;
const ev = (sequence, kind, payload) => jobEvent(JOB, sequence, kind, payload);

// A job as three polls see it: started, progressing, completed.
function threePolls() {
  return [
    statusAnswer(JOB, {
      status: "running",
      percentage: 10,
      stage: "parse",
      cursor: "c2",
      events: [ev(1, "created", { tool: "start_bulk_gift_analysis", status: "pending" }), ev(2, "started", { status: "running" })],
    }),
    statusAnswer(JOB, {
      status: "running",
      percentage: 60,
      stage: "match",
      cursor: "c4",
      events: [ev(3, "progress", { percentage: 30, stage: "extract" }), ev(4, "progress", { percentage: 60, stage: "match", etaSeconds: 12 })],
    }),
    statusAnswer(JOB, {
      status: "completed",
      percentage: 100,
      stage: "write",
      cursor: "c5",
      resultResourceId: RESULT_URI,
      events: [ev(5, "completed", { status: "completed", resultResourceId: RESULT_URI, summary: "Picked gifts for all 3 people." })],
    }),
  ];
}

function start(host, timers = fakeTimers()) {
  const seen = [];
  const session = createJobSession({ jobId: JOB, host, timers, onChange: (state) => seen.push(structuredClone(state)) });
  session.start();
  return { session, timers, seen };
}

const statusCalls = (host) => host.calls.filter((call) => call.name === "get_job_status");

describe("JobSession", () => {
  test("follows a job to the end, passing each answer's cursor to the next poll", async () => {
    const host = fakeHost({ answers: threePolls() });
    const { session, timers, seen } = start(host);
    await timers.advance(0);
    assert.equal(session.state.status, "running");
    assert.equal(session.state.percentage, 0, "started, no progress yet");
    await timers.advance(500);
    assert.equal(session.state.percentage, 60);
    assert.equal(session.state.stage, "match");
    assert.equal(session.state.etaSeconds, 12);
    await timers.advance(500);
    assert.equal(session.state.status, "completed");
    assert.equal(session.state.percentage, 100);
    assert.equal(session.state.etaSeconds, null);
    assert.deepEqual(
      statusCalls(host).map((call) => call.args),
      [{ jobId: JOB }, { jobId: JOB, cursor: "c2" }, { jobId: JOB, cursor: "c4" }],
    );
    await timers.advance(5000);
    assert.equal(statusCalls(host).length, 3, "no poll after the end");
    const percentages = seen.map((state) => state.percentage);
    assert.deepEqual(percentages, [...percentages].sort((a, b) => a - b), "progress never moves backwards");
  });

  test("reads the result as a resource when the host can, and tells the model once", async () => {
    const host = fakeHost({ answers: threePolls(), canReadResources: true, document: resultDocument(4) });
    const { session, timers } = start(host);
    await timers.advance(2000);
    assert.equal(session.state.result.status, "ready");
    assert.equal(session.state.result.document.people.length, 4);
    assert.deepEqual(host.calls.filter((call) => call.name === "resources/read").map((call) => call.args.uri), [RESULT_URI]);
    assert.equal(host.calls.some((call) => call.name === "get_job_result"), false);
    assert.equal(host.contexts.length, 1);
    assert.match(host.contexts[0].text, /completed\. Picked gifts for all 3 people\./);
    assert.deepEqual(host.contexts[0].structured, {
      jobId: JOB,
      status: "completed",
      people: 4,
      withGifts: 4,
      problems: 1,
      occasion: "holiday",
    });
  });

  test("uses the get_job_result tool when the host cannot read resources", async () => {
    const host = fakeHost({ answers: threePolls(), canReadResources: false });
    const { session, timers } = start(host);
    await timers.advance(2000);
    assert.equal(session.state.result.status, "ready");
    assert.deepEqual(host.calls.filter((call) => call.name === "get_job_result").map((call) => call.args), [{ jobId: JOB }]);
    assert.equal(host.calls.some((call) => call.name === "resources/read"), false);
  });

  test("falls back to get_job_result when reading the resource fails", async () => {
    const host = fakeHost({ answers: threePolls(), canReadResources: true });
    host.readResource = async () => {
      throw new Error("resources/read not allowed");
    };
    const { session, timers } = start(host);
    await timers.advance(2000);
    assert.equal(session.state.result.status, "ready");
    assert.equal(host.calls.filter((call) => call.name === "get_job_result").length, 1);
  });

  test("says the server is unreachable, backs off, and keeps the cursor", async () => {
    const [first, second, third] = threePolls();
    const down = new Error("host: server unreachable");
    const isError = { content: [{ type: "text", text: "upstream down" }], isError: true };
    const host = fakeHost({ answers: [first, down, isError, down, second, third] });
    const { session, timers } = start(host);
    await timers.advance(0);
    await timers.advance(500);
    assert.equal(session.state.connection, "Server unreachable — retrying in 1 s");
    await timers.advance(1000);
    assert.equal(session.state.connection, "The server answered: upstream down — retrying in 2 s");
    await timers.advance(2000);
    assert.equal(session.state.connection, "Server unreachable — retrying in 4 s");
    assert.equal(session.state.percentage, 0, "nothing invented while away");
    await timers.advance(4000);
    assert.equal(session.state.connection, "");
    assert.equal(session.state.percentage, 60);
    const cursors = statusCalls(host).map((call) => call.args.cursor);
    assert.deepEqual(cursors, [undefined, "c2", "c2", "c2", "c2"], "every retry asks from the same cursor");
    await timers.advance(500);
    assert.equal(session.state.status, "completed");
  });

  test("the retry notice counts down to the next attempt", async () => {
    const [first, second, third] = threePolls();
    const down = new Error("host: server unreachable");
    const host = fakeHost({ answers: [first, down, down, down, second, third] });
    const { session, timers } = start(host);
    await timers.advance(0);
    await timers.advance(500);
    await timers.advance(1000);
    await timers.advance(2000);
    assert.equal(session.state.connection, "Server unreachable — retrying in 4 s");
    const shown = [];
    for (let second = 0; second < 3; second += 1) {
      await timers.advance(1000);
      shown.push(session.state.connection);
    }
    assert.deepEqual(shown, [3, 2, 1].map((left) => `Server unreachable — retrying in ${left} s`));
    await timers.advance(1000);
    assert.equal(session.state.connection, "", "the retry came on time and got through");
  });

  test("a reloaded view resumes from the saved cursor and lands in the same place", async () => {
    const store = new Map();
    const answers = threePolls();
    const before = fakeHost({ answers, store });
    const first = start(before);
    await first.timers.advance(500); // two polls: up to 60%
    first.session.stop();
    const saved = store.get(JOB);
    assert.deepEqual(saved, { jobId: JOB, cursor: "c4", status: "running", percentage: 60, stage: "match", lastSequence: 4 });

    // The reloaded view: same store, and the server answers from the cursor with nothing new.
    const after = fakeHost({ answers: [statusAnswer(JOB, { status: "running", percentage: 60, stage: "match", cursor: "c4" })], store });
    const second = start(after);
    await second.timers.advance(0);
    assert.deepEqual(statusCalls(after)[0].args, { jobId: JOB, cursor: "c4" });
    assert.equal(second.session.state.percentage, 60);
    assert.equal(second.session.state.stage, "match");
    assert.equal(second.session.tracker.lastSequence, 4);
    second.session.stop();
  });

  test("without saved state a reload replays every event and lands in the same place", async () => {
    const everything = statusAnswer(JOB, {
      status: "running",
      percentage: 60,
      stage: "match",
      cursor: "c4",
      events: [...threePolls()[0].structuredContent.events, ...threePolls()[1].structuredContent.events],
    });
    const host = fakeHost({ answers: [everything] });
    const { session, timers } = start(host);
    await timers.advance(0);
    assert.deepEqual(
      { status: session.state.status, percentage: session.state.percentage, stage: session.state.stage, last: session.tracker.lastSequence },
      { status: "running", percentage: 60, stage: "match", last: 4 },
    );
    session.stop();
  });

  test("a view reloaded after the end fetches the result without new events", async () => {
    const store = new Map([[JOB, { jobId: JOB, cursor: "c5", status: "completed", percentage: 100, stage: "write", lastSequence: 5 }]]);
    const host = fakeHost({
      store,
      canReadResources: true,
      answers: [statusAnswer(JOB, { status: "completed", percentage: 100, cursor: "c5", resultResourceId: RESULT_URI })],
    });
    const { session, timers } = start(host);
    await timers.advance(1000);
    assert.equal(session.state.status, "completed");
    assert.equal(session.state.result.status, "ready");
    assert.equal(statusCalls(host).length, 1);
  });

  test("stop() (teardown) ends polling for good", async () => {
    const host = fakeHost({ answers: [statusAnswer(JOB, { status: "running", cursor: "c1" })] });
    const { session, timers } = start(host);
    await timers.advance(0);
    session.stop();
    await timers.advance(60000);
    assert.equal(statusCalls(host).length, 1);
    assert.deepEqual(timers.pending, []);
  });

  test("cancel asks the server, shows cancelling, then the cancelled ending", async () => {
    const host = fakeHost({
      answers: [
        statusAnswer(JOB, { status: "running", cursor: "c2", events: [ev(1, "created"), ev(2, "started")] }),
        statusAnswer(JOB, { status: "cancelled", cursor: "c3", events: [ev(3, "cancelled", { status: "cancelled", reason: "cancelled on request" })] }),
      ],
    });
    const { session, timers } = start(host);
    await timers.advance(0);
    const cancelling = session.cancel();
    assert.equal(session.state.cancelling, true);
    await cancelling;
    assert.deepEqual(host.calls.find((call) => call.name === "cancel_job").args, { jobId: JOB });
    await timers.advance(0); // polled at once after the cancel, not after the wait
    assert.equal(session.state.status, "cancelled");
    assert.equal(session.state.cancelling, false);
    assert.equal(session.state.cancelReason, "cancelled on request");
    assert.match(host.contexts[0].text, /was cancelled: cancelled on request/);
  });

  test("a cancel that fails says so and lets the user try again", async () => {
    const host = fakeHost({ answers: [statusAnswer(JOB, { status: "running", cursor: "c2", events: [ev(1, "created"), ev(2, "started")] })] });
    const callTool = host.callTool;
    host.callTool = async (name, args) => {
      if (name === "cancel_job") throw new Error("denied");
      return callTool(name, args);
    };
    const { session, timers } = start(host);
    await timers.advance(0);
    await session.cancel();
    assert.equal(session.state.cancelling, false);
    assert.equal(session.state.notice, "Could not cancel the job: denied");
    session.stop();
  });

  test("a failed job shows the error's message and hint", async () => {
    const error = { code: "missing_columns", message: "The CSV has no interests column.", hint: "Add a header row." };
    const host = fakeHost({
      answers: [statusAnswer(JOB, { status: "failed", cursor: "c3", error, events: [ev(1, "created"), ev(2, "started"), ev(3, "failed", { status: "failed", error })] })],
    });
    const { session, timers } = start(host);
    await timers.advance(0);
    assert.equal(session.state.status, "failed");
    assert.deepEqual(session.state.error, error);
    assert.match(host.contexts[0].text, /failed: The CSV has no interests column\. \(Add a header row\.\)/);
  });

  test("events the tracker refuses change nothing shown", async () => {
    const host = fakeHost({
      answers: [
        statusAnswer(JOB, {
          status: "running",
          cursor: "c4",
          events: [ev(1, "created"), ev(2, "started"), ev(3, "progress", { percentage: 50, stage: "match" }), ev(4, "progress", { percentage: 20, stage: "parse" })],
        }),
      ],
    });
    const { session, timers } = start(host);
    await timers.advance(0);
    assert.equal(session.state.percentage, 50);
    assert.equal(session.state.stage, "match");
    assert.equal(session.tracker.rejected.length, 1);
    session.stop();
  });
});

describe("documentFromResource", () => {
  test("parses JSON text", () => {
    assert.deepEqual(documentFromResource({ contents: [{ text: '{"people":[]}' }] }), { people: [] });
  });

  test("decodes a base64 blob as UTF-8", () => {
    const blob = Buffer.from(JSON.stringify({ people: [{ name: "Zoë" }] })).toString("base64");
    assert.equal(documentFromResource({ contents: [{ blob }] }).people[0].name, "Zoë");
  });

  test("refuses an empty answer", () => {
    assert.throws(() => documentFromResource({ contents: [] }), /empty/);
  });
});

describe("endingSummary", () => {
  test("counts from the document when the event had no summary", () => {
    const { text } = endingSummary({ jobId: "j", status: "completed", document: resultDocument(5) });
    assert.equal(text, "Bulk gift analysis j completed. Picked gifts for 4 of 5 people; 1 row had a problem.");
  });
});

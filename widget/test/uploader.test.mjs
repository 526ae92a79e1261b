import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { PART_ATTEMPTS, PART_BYTES, SEND_PART_TOOL, fileProblem, startAnalysis, toBase64 } from "../src/uploader.js";

const SETTINGS = { occasion: "birthday", budget_per_person: 40 };

function fileOf(size, name = "people.csv") {
  const bytes = Uint8Array.from({ length: size }, (_, index) => (index * 7) % 251);
  return { file: new File([bytes], name, { type: "text/csv" }), bytes };
}

/** A host whose tools answer from `respond(name, args, attempt)`; every call is recorded. */
function host(respond, extra = {}) {
  const calls = [];
  return {
    calls,
    async callTool(name, args) {
      calls.push({ name, args });
      return respond(name, args, calls.filter((call) => call.name === name && call.args.index === args.index).length);
    },
    ...extra,
  };
}

const started = { content: [], structuredContent: { jobId: "job-1", status: "pending" }, isError: false };
const accepted = { content: [{ type: "text", text: "ok" }], isError: false };
const noPause = async () => {};

describe("uploader", () => {
  test("an MCP Apps host starts the job with the file described, then sends every part in order", async () => {
    const { file, bytes } = fileOf(PART_BYTES * 2 + 10);
    const mcp = host((name) => (name === SEND_PART_TOOL ? accepted : started));
    const { jobId, sent } = await startAnalysis({ host: mcp, file, settings: SETTINGS, pause: noPause });
    await sent;
    assert.equal(jobId, "job-1");
    const [start, ...parts] = mcp.calls;
    assert.deepEqual(start.args, { upload: { size: bytes.length, file_name: "people.csv", mime_type: "text/csv" }, ...SETTINGS });
    assert.deepEqual(parts.map((call) => call.args.index), [0, 1, 2]);
    const joined = Buffer.concat(parts.map((call) => Buffer.from(call.args.data, "base64")));
    assert.deepEqual(new Uint8Array(joined), bytes);
    assert.ok(parts.every((call) => call.args.jobId === "job-1"));
  });

  test("a part the host fails to pass on is sent again, and after the last attempt the reason is given", async () => {
    const { file } = fileOf(100);
    const flaky = host((name, _args, attempt) => {
      if (name !== SEND_PART_TOOL) return started;
      if (attempt < 2) throw new Error("host busy");
      return accepted;
    });
    await (await startAnalysis({ host: flaky, file, settings: SETTINGS, pause: noPause })).sent;
    assert.equal(flaky.calls.filter((call) => call.name === SEND_PART_TOOL).length, 2);

    const down = host((name) => {
      if (name !== SEND_PART_TOOL) return started;
      throw new Error("host gone");
    });
    const { sent } = await startAnalysis({ host: down, file, settings: SETTINGS, pause: noPause });
    await assert.rejects(sent, /The file could not be sent: host gone/);
    assert.equal(down.calls.filter((call) => call.name === SEND_PART_TOOL).length, PART_ATTEMPTS);
  });

  test("a part the server refuses is not sent again", async () => {
    const { file } = fileOf(100);
    const refusing = host((name) =>
      name === SEND_PART_TOOL ? { content: [{ type: "text", text: "Job job-1 is failed" }], isError: true } : started,
    );
    const { sent } = await startAnalysis({ host: refusing, file, settings: SETTINGS, pause: noPause });
    await assert.rejects(sent, /Job job-1 is failed/);
    assert.equal(refusing.calls.filter((call) => call.name === SEND_PART_TOOL).length, 1);
  });

  test("window.openai keeps the file and the job downloads it as an attached file", async () => {
    const { file } = fileOf(100);
    const stages = [];
    const openai = host(() => started, {
      uploadFile: async (given) => (given === file ? "file-9" : "wrong"),
      fileDownloadUrl: async (fileId) => `https://files.example/${fileId}`,
    });
    const { jobId, sent } = await startAnalysis({ host: openai, file, settings: SETTINGS, onStage: (stage) => stages.push(stage) });
    await sent;
    assert.equal(jobId, "job-1");
    assert.deepEqual(openai.calls, [
      {
        name: "start_bulk_gift_analysis",
        args: {
          employees_file: { download_url: "https://files.example/file-9", file_id: "file-9", file_name: "people.csv", mime_type: "text/csv" },
          ...SETTINGS,
        },
      },
    ]);
    assert.deepEqual(stages, ["Uploading the file…"]);
  });

  test("a start the server refuses says why", async () => {
    const { file } = fileOf(10);
    const refusing = host(() => ({ content: [{ type: "text", text: "Unknown tool" }], isError: true }));
    await assert.rejects(startAnalysis({ host: refusing, file, settings: SETTINGS }), /Unknown tool/);
  });

  test("says what is wrong with a file before sending it", () => {
    assert.equal(fileProblem(null, 10), "Choose the employee file first.");
    assert.equal(fileProblem(new File([], "a.csv"), 10), "a.csv is empty.");
    assert.match(fileProblem(fileOf(3 * 1048576).file, 1048576), /people\.csv is 3\.0 MB; the limit is 1\.0 MB/);
    assert.equal(fileProblem(fileOf(10).file, 1048576), null);
  });

  test("base64 of a whole part matches the platform's", () => {
    const { bytes } = fileOf(PART_BYTES);
    assert.equal(toBase64(bytes), Buffer.from(bytes).toString("base64"));
  });
});

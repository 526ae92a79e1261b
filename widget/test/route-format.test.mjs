import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { formatCount, formatEta, formatUsd, stageLabel, wholePercent } from "../src/format.js";
import { routeToolResult, waitingMessage } from "../src/route.js";
import { resolveTheme } from "../src/theme.js";

describe("routeToolResult", () => {
  test("a notice beside the gifts goes with them to the gift view", () => {
    const gifts = [{ name: "Camp Mug", price: 19, category: "outdoors", reason: "closest to fishing" }];
    const notice = "Nothing in the catalog matches 'fishing'.";
    assert.deepEqual(routeToolResult({ content: [], structuredContent: { gifts, notice }, isError: false }), {
      view: "gifts",
      gifts,
      notice,
    });
  });

  test("gifts in structuredContent call for the gift view", () => {
    const gifts = [{ name: "Lamp", price: 24.99, category: "home", reason: "reads a lot" }];
    assert.deepEqual(routeToolResult({ content: [], structuredContent: { gifts }, isError: false }), { view: "gifts", gifts });
  });

  test("a jobId calls for the job view", () => {
    assert.deepEqual(routeToolResult({ content: [], structuredContent: { jobId: "j1", status: "pending" }, isError: false }), {
      view: "job",
      jobId: "j1",
      status: "pending",
    });
  });

  test("an error result shows its text", () => {
    const result = { content: [{ type: "text", text: "Nothing fits a $5 budget." }], isError: true };
    assert.deepEqual(routeToolResult(result), { view: "error", message: "Nothing fits a $5 budget." });
  });

  test("an empty list with a notice shows the notice, where only structuredContent arrives", () => {
    const notice = "Nothing fits a $5 budget. The cheapest option is Socks at $6.00.";
    const result = { content: [], structuredContent: { gifts: [], notice }, isError: false };
    assert.deepEqual(routeToolResult(result), { view: "error", message: notice });
  });

  test("anything else is an error view, never a crash", () => {
    assert.equal(routeToolResult({ content: [], isError: false }).view, "error");
    assert.equal(routeToolResult(undefined).view, "error");
  });

  test("_meta is never what decides", () => {
    const result = { content: [], structuredContent: { gifts: [] }, isError: false, _meta: { jobId: "x" } };
    assert.equal(routeToolResult(result).view, "gifts");
  });

  test("the waiting words follow the tool's name or its arguments", () => {
    assert.equal(waitingMessage("start_bulk_gift_analysis", null), "Starting the bulk gift analysis…");
    assert.equal(waitingMessage(null, { recipient: "my aunt" }), "Finding gift ideas…");
    assert.equal(waitingMessage(null, null), "Waiting for the result…");
  });
});

describe("format", () => {
  test("prices in USD", () => {
    assert.equal(formatUsd(24.99), "$24.99");
    assert.equal(formatUsd(1200), "$1,200.00");
    assert.equal(formatUsd(null), "");
  });

  test("counts with separators", () => {
    assert.equal(formatCount(2000), "2,000");
  });

  test("ETA in seconds, then minutes", () => {
    assert.equal(formatEta(12.4), "about 12 s left");
    assert.equal(formatEta(150), "about 3 min left");
    assert.equal(formatEta(0.2), "almost done");
    assert.equal(formatEta(null), "");
  });

  test("whole percentages never reach 100 early", () => {
    assert.equal(wholePercent(99.9), 99);
    assert.equal(wholePercent(100), 100);
    assert.equal(wholePercent(140), 100);
    assert.equal(wholePercent(undefined), 0);
  });

  test("stage names read as words", () => {
    assert.equal(stageLabel("match"), "Matching gifts");
    assert.equal(stageLabel("polish"), "Polish");
    assert.equal(stageLabel(null), "");
  });

  test("the theme is the host's word, else the system's", () => {
    assert.equal(resolveTheme("dark", false), "dark");
    assert.equal(resolveTheme(undefined, true), "dark");
    assert.equal(resolveTheme("sepia", false), "light");
  });
});

describe("job steps", () => {
  test("a file stage is the file step, whichever way the file came, and the analysis stages are their own", async () => {
    const { stepOf } = await import("../src/views/job.js");
    assert.equal(stepOf("receiving the file"), "file");
    assert.equal(stepOf("downloading the file: 1.2 MB of 9.8 MB"), "file");
    assert.deepEqual(["parse", "extract", "match", "write"].map(stepOf), ["parse", "extract", "match", "write"]);
    assert.equal(stepOf("resumed"), null);
    assert.equal(stepOf(null), null);
  });
});

describe("the bulk form", () => {
  test("a form result opens the form with what the tool set up", () => {
    const form = { form: "bulk", occasion: "birthday", budgetPerPerson: 40, maxBytes: 1024 };
    assert.deepEqual(routeToolResult({ content: [], structuredContent: form, isError: false }), { view: "form", form });
    assert.equal(waitingMessage("open_bulk_gift_form", {}), "Opening the form…");
  });
});

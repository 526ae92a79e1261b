import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { connectHost } from "../src/bridge/connect.js";
import { createEmitter } from "../src/bridge/emitter.js";
import { createMcpAppsHost } from "../src/bridge/mcp-apps.js";
import { createOpenAiHost } from "../src/bridge/openai.js";
import { METHOD_NOT_FOUND, RpcError, createRpcPeer } from "../src/bridge/rpc.js";
import { createStateStore } from "../src/bridge/state-store.js";
import { normaliseToolResult, resultText } from "../src/bridge/tool-result.js";
import { fakeTimers, fakeWindow, flush } from "../testing/fakes.mjs";

const memoryStore = () => createStateStore([]);
const sentMessages = (window) => window.host.sent.map((entry) => entry.message);

/** Answers the view's ui/initialize the way a host does. */
function answerInitialize(window, { hostContext = { theme: "dark" }, hostCapabilities = { serverTools: {} } } = {}) {
  const request = sentMessages(window).find((message) => message.method === "ui/initialize");
  window.receive({
    jsonrpc: "2.0",
    id: request.id,
    result: { protocolVersion: "2026-01-26", hostInfo: { name: "test-host", version: "1" }, hostCapabilities, hostContext },
  });
  return request;
}

describe("rpc peer", () => {
  function pair() {
    const sent = [];
    const notes = [];
    const peer = createRpcPeer({
      send: (message) => sent.push(message),
      onRequest: (method) => (method === "ping" ? {} : method === "boom" ? Promise.reject(new RpcError({ code: -32000, message: "no" })) : undefined),
      onNotification: (method, params) => notes.push([method, params]),
    });
    return { peer, sent, notes };
  }

  test("matches answers to requests by id, in any order", async () => {
    const { peer, sent } = pair();
    const first = peer.request("a", { n: 1 });
    const second = peer.request("b", { n: 2 });
    assert.deepEqual(sent.map((message) => [message.jsonrpc, message.method, message.params]), [
      ["2.0", "a", { n: 1 }],
      ["2.0", "b", { n: 2 }],
    ]);
    assert.notEqual(sent[0].id, sent[1].id);
    peer.receive({ jsonrpc: "2.0", id: sent[1].id, result: "second" });
    peer.receive({ jsonrpc: "2.0", id: sent[0].id, result: "first" });
    assert.deepEqual(await Promise.all([first, second]), ["first", "second"]);
    assert.equal(peer.pendingCount, 0);
  });

  test("an error answer rejects with its code and message", async () => {
    const { peer, sent } = pair();
    const call = peer.request("tools/call", {});
    peer.receive({ jsonrpc: "2.0", id: sent[0].id, error: { code: -32602, message: "Unknown job" } });
    await assert.rejects(call, (error) => error instanceof RpcError && error.code === -32602 && error.message === "Unknown job");
  });

  test("a request without an answer times out", async () => {
    const timers = fakeTimers();
    const peer = createRpcPeer({ send: () => {}, timers });
    const call = peer.request("slow", {}, { timeoutMs: 1000 });
    const outcome = assert.rejects(call, /slow timed out/);
    await timers.advance(999);
    assert.equal(peer.pendingCount, 1);
    await timers.advance(1);
    await outcome;
    assert.equal(peer.pendingCount, 0);
  });

  test("answers host requests, and unknown methods with -32601", async () => {
    const { peer, sent } = pair();
    peer.receive({ jsonrpc: "2.0", id: 41, method: "ping" });
    peer.receive({ jsonrpc: "2.0", id: 42, method: "ui/something-new", params: {} });
    peer.receive({ jsonrpc: "2.0", id: 43, method: "boom" });
    await flush();
    assert.deepEqual(sent.find((message) => message.id === 41), { jsonrpc: "2.0", id: 41, result: {} });
    assert.equal(sent.find((message) => message.id === 42).error.code, METHOD_NOT_FOUND);
    assert.deepEqual(sent.find((message) => message.id === 43).error, { code: -32000, message: "no" });
  });

  test("routes notifications and ignores what is not JSON-RPC 2.0", () => {
    const { peer, notes, sent } = pair();
    peer.receive({ jsonrpc: "2.0", method: "note", params: { x: 1 } });
    peer.receive({ method: "note" });
    peer.receive("text");
    peer.receive(null);
    peer.receive({ jsonrpc: "2.0", id: 999, result: {} }); // an answer to nothing
    assert.deepEqual(notes, [["note", { x: 1 }]]);
    assert.deepEqual(sent, []);
  });
});

describe("emitter", () => {
  test("keeps events until the first listener, then delivers live", () => {
    const events = createEmitter();
    const seen = [];
    events.emit("tool-result", 1);
    events.emit("tool-result", 2);
    events.on("tool-result", (value) => seen.push(value));
    events.emit("tool-result", 3);
    assert.deepEqual(seen, [1, 2, 3]);
  });
});

describe("MCP Apps adapter", () => {
  test("initializes with the spec's parameters, then confirms with initialized", async () => {
    const window = fakeWindow();
    const { initialize } = createMcpAppsHost({ window, stateStore: memoryStore() });
    const ready = initialize();
    const request = sentMessages(window)[0];
    assert.equal(request.method, "ui/initialize");
    assert.deepEqual(request.params, {
      protocolVersion: "2026-01-26",
      appInfo: { name: "giftgenius-widget", version: "0.1.0" },
      appCapabilities: { availableDisplayModes: ["inline", "fullscreen"] },
    });
    assert.equal(window.host.sent[0].targetOrigin, "*");
    answerInitialize(window);
    const adapter = await ready;
    assert.equal(adapter.kind, "mcp-apps");
    assert.equal(adapter.hostContext.theme, "dark");
    assert.deepEqual(sentMessages(window)[1], { jsonrpc: "2.0", method: "ui/notifications/initialized" });
  });

  test("accepts messages only from window.parent", async () => {
    const window = fakeWindow();
    const { initialize } = createMcpAppsHost({ window, stateStore: memoryStore() });
    let settled = false;
    initialize().then(() => {
      settled = true;
    });
    const request = sentMessages(window)[0];
    window.receive({ jsonrpc: "2.0", id: request.id, result: { hostContext: {} } }, { some: "other frame" });
    await flush();
    assert.equal(settled, false);
  });

  test("turns host notifications into events, merging partial host contexts", async () => {
    const window = fakeWindow();
    const { adapter, initialize } = createMcpAppsHost({ window, stateStore: memoryStore() });
    const ready = initialize();
    answerInitialize(window, { hostContext: { theme: "light", displayMode: "inline" } });
    await ready;
    const seen = [];
    for (const name of ["tool-input", "tool-result", "tool-cancelled", "host-context-changed"]) {
      adapter.on(name, (value) => seen.push([name, value]));
    }
    window.receive({ jsonrpc: "2.0", method: "ui/notifications/tool-input-partial", params: { arguments: { occ: "b" } } });
    window.receive({ jsonrpc: "2.0", method: "ui/notifications/tool-input", params: { arguments: { occasion: "birthday" } } });
    window.receive({
      jsonrpc: "2.0",
      method: "ui/notifications/tool-result",
      params: { content: [{ type: "text", text: "ok" }], structuredContent: { gifts: [] }, _meta: { x: 1 } },
    });
    window.receive({ jsonrpc: "2.0", method: "ui/notifications/tool-cancelled", params: { reason: "user" } });
    window.receive({ jsonrpc: "2.0", method: "ui/notifications/host-context-changed", params: { theme: "dark" } });
    assert.deepEqual(seen, [
      ["tool-input", { occasion: "birthday" }],
      ["tool-result", { content: [{ type: "text", text: "ok" }], isError: false, structuredContent: { gifts: [] } }],
      ["tool-cancelled", { reason: "user" }],
      ["host-context-changed", { theme: "dark", displayMode: "inline" }],
    ]);
  });

  test("answers teardown with {} after its listeners ran, and ping with {}", async () => {
    const window = fakeWindow();
    const { adapter, initialize } = createMcpAppsHost({ window, stateStore: memoryStore() });
    const ready = initialize();
    answerInitialize(window);
    await ready;
    const order = [];
    adapter.on("teardown", () => order.push("stopped"));
    const answers = () => sentMessages(window).filter((message) => message.id === 7 || message.id === 8);
    window.receive({ jsonrpc: "2.0", id: 7, method: "ui/resource-teardown", params: { reason: "closed" } });
    window.receive({ jsonrpc: "2.0", id: 8, method: "ping" });
    window.receive({ jsonrpc: "2.0", id: 9, method: "tools/list" });
    await flush();
    assert.deepEqual(order, ["stopped"]);
    assert.deepEqual(answers(), [
      { jsonrpc: "2.0", id: 7, result: {} },
      { jsonrpc: "2.0", id: 8, result: {} },
    ]);
    assert.equal(sentMessages(window).find((message) => message.id === 9).error.code, -32601);
  });

  test("calls tools, reads resources only with serverResources, updates model context", async () => {
    const window = fakeWindow();
    const { adapter, initialize } = createMcpAppsHost({ window, stateStore: memoryStore() });
    const ready = initialize();
    answerInitialize(window, { hostCapabilities: { serverTools: {}, serverResources: {} } });
    await ready;
    assert.equal(adapter.canReadResources, true);

    const call = adapter.callTool("get_job_status", { jobId: "j" });
    const toolRequest = sentMessages(window).at(-1);
    assert.deepEqual([toolRequest.method, toolRequest.params], ["tools/call", { name: "get_job_status", arguments: { jobId: "j" } }]);
    window.receive({ jsonrpc: "2.0", id: toolRequest.id, result: { content: [], structuredContent: { jobId: "j" } } });
    assert.deepEqual((await call).structuredContent, { jobId: "j" });

    const read = adapter.readResource("herald://jobs/j/result.json");
    const readRequest = sentMessages(window).at(-1);
    assert.deepEqual([readRequest.method, readRequest.params], ["resources/read", { uri: "herald://jobs/j/result.json" }]);
    window.receive({ jsonrpc: "2.0", id: readRequest.id, result: { contents: [{ text: "{}" }] } });
    assert.equal((await read).contents[0].text, "{}");

    const update = adapter.updateModelContext("done", { jobId: "j" });
    const updateRequest = sentMessages(window).at(-1);
    assert.deepEqual([updateRequest.method, updateRequest.params], [
      "ui/update-model-context",
      { content: [{ type: "text", text: "done" }], structuredContent: { jobId: "j" } },
    ]);
    window.receive({ jsonrpc: "2.0", id: updateRequest.id, result: {} });
    await update;

    adapter.reportSize({ width: 400, height: 321 });
    assert.deepEqual(sentMessages(window).at(-1), { jsonrpc: "2.0", method: "ui/notifications/size-changed", params: { width: 400, height: 321 } });
  });

  test("refuses resources/read without the serverResources capability", async () => {
    const window = fakeWindow();
    const { adapter, initialize } = createMcpAppsHost({ window, stateStore: memoryStore() });
    const ready = initialize();
    answerInitialize(window, { hostCapabilities: { serverTools: {} } });
    await ready;
    assert.equal(adapter.canReadResources, false);
    const before = sentMessages(window).length;
    await assert.rejects(adapter.readResource("x://y"), /cannot read/);
    assert.equal(sentMessages(window).length, before, "nothing sent");
  });
});

describe("window.openai adapter", () => {
  function fakeOpenAi(globals = {}) {
    const calls = [];
    const states = [];
    return {
      theme: "dark",
      maxHeight: 500,
      toolInput: { occasion: "wedding" },
      toolOutput: null,
      widgetState: null,
      ...globals,
      calls,
      states,
      async callTool(name, args) {
        calls.push([name, args]);
        return { result: JSON.stringify({ jobId: "j", status: "running" }) };
      },
      async setWidgetState(state) {
        states.push(structuredClone(state));
      },
    };
  }

  test("emits the output there at load, and each new output from openai:set_globals once", () => {
    const openai = fakeOpenAi({ toolOutput: { gifts: [{ name: "A" }] } });
    const window = fakeWindow({ framed: true, openai });
    const adapter = createOpenAiHost({ window });
    const results = [];
    const contexts = [];
    adapter.on("tool-result", (result) => results.push(result.structuredContent));
    adapter.on("host-context-changed", (context) => contexts.push(context.theme));
    assert.deepEqual(adapter.hostContext, { theme: "dark", containerDimensions: { maxHeight: 500 } });
    window.dispatch("openai:set_globals", { detail: { globals: { toolOutput: { gifts: [{ name: "A" }] } } } });
    window.dispatch("openai:set_globals", { detail: { globals: { toolOutput: { jobId: "j2", status: "pending" }, theme: "light" } } });
    assert.deepEqual(results, [{ gifts: [{ name: "A" }] }, { jobId: "j2", status: "pending" }]);
    assert.deepEqual(contexts, ["light"]);
    assert.equal(adapter.canReadResources, false);
  });

  test("normalises callTool answers to a CallToolResult", async () => {
    const openai = fakeOpenAi();
    const adapter = createOpenAiHost({ window: fakeWindow({ openai }) });
    const result = await adapter.callTool("get_job_status", { jobId: "j" });
    assert.deepEqual(openai.calls, [["get_job_status", { jobId: "j" }]]);
    assert.deepEqual(result.structuredContent, { jobId: "j", status: "running" });
    assert.equal(result.isError, false);
  });

  test("keeps job state and the model summary in widget state", async () => {
    const openai = fakeOpenAi({ widgetState: { jobId: "j", cursor: "c9", lastSequence: 9, status: "running", percentage: 40, stage: "match" } });
    const adapter = createOpenAiHost({ window: fakeWindow({ openai }) });
    assert.equal(adapter.loadState("j").cursor, "c9");
    assert.equal(adapter.loadState("other"), null);
    adapter.saveState({ jobId: "j", cursor: "c10", lastSequence: 10, status: "completed", percentage: 100, stage: "write" });
    await adapter.updateModelContext("Job j completed.", { people: 3 });
    assert.deepEqual(openai.states.at(-1), {
      jobId: "j",
      cursor: "c10",
      lastSequence: 10,
      status: "completed",
      percentage: 100,
      stage: "write",
      summary: { text: "Job j completed.", people: 3 },
    });
  });
});

describe("connectHost", () => {
  test("outside a frame, uses window.openai at once", async () => {
    const window = fakeWindow({ framed: false, openai: { toolOutput: null } });
    const adapter = await connectHost({ window, stateStore: memoryStore(), timers: fakeTimers() });
    assert.equal(adapter.kind, "openai");
    assert.deepEqual(window.host.sent, [], "no MCP handshake without a parent");
  });

  test("in a frame, an answered ui/initialize wins even when window.openai exists", async () => {
    const timers = fakeTimers();
    const window = fakeWindow({ framed: true, openai: { toolOutput: null } });
    const connecting = connectHost({ window, stateStore: memoryStore(), timers });
    await timers.advance(200);
    answerInitialize(window);
    assert.equal((await connecting).kind, "mcp-apps");
  });

  test("in a frame, falls back to window.openai after 1.5 s without an answer", async () => {
    const timers = fakeTimers();
    const window = fakeWindow({ framed: true, openai: { toolOutput: null } });
    let adapter = null;
    connectHost({ window, stateStore: memoryStore(), timers }).then((found) => {
      adapter = found;
    });
    await timers.advance(1499);
    assert.equal(adapter, null);
    await timers.advance(1);
    assert.equal(adapter?.kind, "openai");
    const messagesBefore = window.listenerCount("message");
    answerInitialize(window); // too late: ignored
    await flush();
    assert.equal(adapter.kind, "openai");
    assert.equal(messagesBefore, 0, "the MCP listener was removed");
  });

  test("with neither, says it is waiting and takes a late MCP answer", async () => {
    const timers = fakeTimers();
    const window = fakeWindow({ framed: true });
    let undecided = 0;
    const connecting = connectHost({ window, stateStore: memoryStore(), timers, onUndecided: () => (undecided += 1) });
    await timers.advance(5000);
    assert.equal(undecided, 1);
    answerInitialize(window);
    assert.equal((await connecting).kind, "mcp-apps");
  });

  test("with neither, takes window.openai when it appears later", async () => {
    const timers = fakeTimers();
    const window = fakeWindow({ framed: true });
    const connecting = connectHost({ window, stateStore: memoryStore(), timers });
    await timers.advance(2000);
    window.openai = { toolOutput: { gifts: [] } };
    window.dispatch("openai:set_globals", { detail: { globals: { toolOutput: { gifts: [] } } } });
    assert.equal((await connecting).kind, "openai");
  });
});

describe("normaliseToolResult", () => {
  test("keeps a CallToolResult's content, structuredContent and isError, and drops _meta", () => {
    assert.deepEqual(normaliseToolResult({ content: [{ type: "text", text: "x" }], structuredContent: { a: 1 }, isError: true, _meta: { m: 1 } }), {
      content: [{ type: "text", text: "x" }],
      structuredContent: { a: 1 },
      isError: true,
    });
  });

  test("reads the older {result: string} answer of window.openai.callTool", () => {
    assert.deepEqual(normaliseToolResult({ result: '{"jobId":"j"}' }), {
      content: [{ type: "text", text: '{"jobId":"j"}' }],
      structuredContent: { jobId: "j" },
      isError: false,
    });
    assert.deepEqual(normaliseToolResult({ result: "plain words" }), { content: [{ type: "text", text: "plain words" }], isError: false });
    assert.equal(normaliseToolResult({ result: JSON.stringify({ content: [], isError: true }) }).isError, true);
  });

  test("treats a bare object as structured content and nothing as empty", () => {
    assert.deepEqual(normaliseToolResult({ gifts: [] }), { content: [], structuredContent: { gifts: [] }, isError: false });
    assert.deepEqual(normaliseToolResult(undefined), { content: [], isError: false });
  });

  test("resultText joins the text blocks only", () => {
    assert.equal(resultText({ content: [{ type: "text", text: "a" }, { type: "image", data: "x" }, { type: "text", text: "b" }] }), "a\nb");
  });
});

describe("state store", () => {
  function fakeStorage() {
    const map = new Map();
    return {
      map,
      getItem: (key) => (map.has(key) ? map.get(key) : null),
      setItem: (key, value) => map.set(key, String(value)),
      removeItem: (key) => map.delete(key),
    };
  }

  test("saves and loads by jobId in the first storage that works", () => {
    const storage = fakeStorage();
    const store = createStateStore([
      () => {
        throw new DOMException("sandboxed", "SecurityError");
      },
      () => storage,
    ]);
    store.save({ jobId: "j1", cursor: "c" });
    assert.deepEqual(JSON.parse(storage.map.get("giftgenius:job:j1")), { jobId: "j1", cursor: "c" });
    assert.deepEqual(createStateStore([() => storage]).load("j1"), { jobId: "j1", cursor: "c" }, "a reloaded view finds it");
    assert.equal(store.load("j2"), null);
  });

  test("falls back to memory when no storage can be used", () => {
    const broken = {
      getItem() {
        throw new Error("no");
      },
      setItem() {
        throw new Error("no");
      },
      removeItem() {},
    };
    const store = createStateStore([() => broken, () => undefined]);
    store.save({ jobId: "j", cursor: "c1" });
    assert.equal(store.kind, "memory");
    assert.deepEqual(store.load("j"), { jobId: "j", cursor: "c1" });
  });
});

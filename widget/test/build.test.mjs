import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { SIZE_LIMIT, buildDocument } from "../build.mjs";
import { CSS_MARKER, JS_MARKER, assemble, escapeInlineScript, escapeInlineStyle } from "../tools/assemble.mjs";

const TEMPLATE = `<html><style>${CSS_MARKER}</style><script>${JS_MARKER}</script></html>`;

describe("inlining", () => {
  test("no </script> in the code can close the script element", () => {
    const js = 'const a = "</script><b>"; const b = /<\\/SCRIPT>/; // </Script>';
    const out = escapeInlineScript(js);
    assert.doesNotMatch(out, /<\/script/i);
    assert.equal(out, 'const a = "<\\/script><b>"; const b = /<\\/SCRIPT>/; // <\\/Script>');
    // The rewritten string means the same in JavaScript.
    assert.equal(new Function('return "<\\/script>"')(), "</script>");
    assert.equal(new Function("return /<\\/script>/.test('</script>')")(), true);
  });

  test("refuses <!-- and <script, which confuse the HTML parser inside a script", () => {
    assert.throws(() => escapeInlineScript('x = "<!--"'), /unsafe inside <script>/);
    assert.throws(() => escapeInlineScript('x = "<SCRIPT>"'), /unsafe inside <script>/);
  });

  test("no </style> in the stylesheet can close the style element", () => {
    assert.equal(escapeInlineStyle('a::after{content:"</style>"}'), 'a::after{content:"<\\/style>"}');
  });

  test("splices the code in verbatim, even with $& or $' in it", () => {
    const html = assemble(TEMPLATE, { css: "a{b:c}", js: "s.replace(/x/, \"$&$'\")" });
    assert.equal(html, `<html><style>a{b:c}</style><script>s.replace(/x/, "$&$'")</script></html>`);
  });

  test("needs each marker exactly once", () => {
    assert.throws(() => assemble("<html></html>", { css: "", js: "" }), /exactly once/);
    assert.throws(() => assemble(TEMPLATE + JS_MARKER, { css: "", js: "" }), /exactly once/);
  });
});

describe("the built document", async () => {
  const html = await buildDocument();

  test("is the same bytes on every build", async () => {
    assert.equal(await buildDocument(), html);
  });

  test("stays within the size budget", () => {
    assert.ok(Buffer.byteLength(html) <= SIZE_LIMIT, `${Buffer.byteLength(html)} bytes`);
  });

  test("is self-contained: one inline script and style, nothing fetched", () => {
    assert.equal(html.match(/<script\b/gi).length, 1);
    assert.equal(html.match(/<\/script>/gi).length, 1);
    assert.equal(html.match(/<style\b/gi).length, 1);
    assert.doesNotMatch(html, /<script[^>]*\bsrc=|<link\b|<img\b|@import|url\(\s*['"]?https?:/i);
    assert.doesNotMatch(html, /\bfetch\(|XMLHttpRequest|WebSocket|EventSource/);
  });

  test("carries the DOM contract's starting attributes", () => {
    assert.match(html, /<html lang="en" data-host="none" data-theme="light">/);
    assert.match(html, /<main id="app" data-view="waiting">/);
    assert.match(html, /^<!doctype html>/i);
  });
});

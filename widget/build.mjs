#!/usr/bin/env node
// Builds the widget into one self-contained file, packages/giftgenius/src/giftgenius/widget/gifts.html.
//
//   node build.mjs           write the file
//   node build.mjs --check   exit 1 if the committed file differs from a fresh build (CI)
//
// The output depends only on the sources and the pinned esbuild, so the same sources give
// the same bytes. Paths are relative to this file: it runs from any directory.

import { readFile, mkdir, writeFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import { assemble } from "./tools/assemble.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const source = join(here, "src");
export const OUTPUT = join(here, "..", "packages", "giftgenius", "src", "giftgenius", "widget", "gifts.html");
export const SIZE_LIMIT = 100 * 1024;

/** The document as a string, built in memory. */
export async function buildDocument() {
  const [script, style, template] = await Promise.all([
    esbuild.build({
      entryPoints: [join(source, "main.js")],
      bundle: true,
      format: "iife",
      minify: true,
      target: "es2020",
      platform: "browser",
      charset: "utf8",
      legalComments: "none",
      write: false,
      logLevel: "silent",
    }),
    readFile(join(source, "styles.css"), "utf8").then((css) =>
      esbuild.transform(css, { loader: "css", minify: true, charset: "utf8", legalComments: "none" }),
    ),
    readFile(join(source, "index.html"), "utf8"),
  ]);
  return assemble(template, { css: style.code, js: script.outputFiles[0].text });
}

async function main(args) {
  const html = await buildDocument();
  const size = Buffer.byteLength(html, "utf8");
  const shown = relative(process.cwd(), OUTPUT) || OUTPUT;
  if (size > SIZE_LIMIT) {
    throw new Error(`the widget is ${size} bytes, over the ${SIZE_LIMIT}-byte budget`);
  }
  if (args.includes("--check")) {
    let committed = null;
    try {
      committed = await readFile(OUTPUT, "utf8");
    } catch {
      // missing: reported below
    }
    if (committed !== html) {
      console.error(
        committed === null
          ? `${shown} is missing. Run \`node widget/build.mjs\` and commit it.`
          : `${shown} is out of date with widget/src. Run \`node widget/build.mjs\` and commit the result.`,
      );
      process.exit(1);
    }
    console.log(`${shown} is up to date (${size} bytes).`);
    return;
  }
  await mkdir(dirname(OUTPUT), { recursive: true });
  await writeFile(OUTPUT, html);
  console.log(`wrote ${shown} (${size} bytes)`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main(process.argv.slice(2)).catch((error) => {
    console.error(`widget build failed: ${error.message}`);
    process.exit(1);
  });
}

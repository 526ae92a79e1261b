// Bundles the test host and the window.openai shim for the browser: dist/host.js, dist/openai-shim.js.
import { build } from "esbuild";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

await build({
  entryPoints: { host: join(here, "src/host.ts"), "openai-shim": join(here, "src/openai-shim.ts") },
  outdir: join(here, "dist"),
  bundle: true,
  format: "iife",
  platform: "browser",
  target: "chrome120",
  sourcemap: "linked",
  logLevel: "warning",
});
console.log(`built ${join(here, "dist")}`);

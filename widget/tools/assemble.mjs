// Putting the bundled script and the stylesheet into the HTML template, safely.
//
// Inline code ends at the first `</script` (or `</style`) the HTML parser meets, wherever it
// stands in the code: inside a string, a regular expression or a comment. esbuild already
// writes such sequences in strings as `<\/script`; these functions make sure of it for the
// whole text and refuse the sequences that cannot be neutralised without changing the code.

export const CSS_MARKER = "/*@inline styles.css*/";
export const JS_MARKER = "/*@inline main.js*/";

/** Script text that cannot end or confuse its <script> element. Throws if it cannot be made so. */
export function escapeInlineScript(js) {
  // `<\/` means `</` in JS strings, template literals and regular expressions alike.
  const escaped = js.replace(/<\/(script)/gi, "<\\/$1");
  // `<!--` and `<script` inside a script element switch the HTML parser into its "escaped"
  // states, where a later `</script>` may no longer close it. They cannot be rewritten without
  // knowing whether they stand in a string or a regular expression, so the build stops.
  const risky = escaped.match(/<!--|<script/i);
  if (risky) {
    throw new Error(`the bundled script contains ${JSON.stringify(risky[0])}, which is unsafe inside <script>; write it differently (e.g. "<" + "!--")`);
  }
  return escaped;
}

/** Style text that cannot end its <style> element. In CSS `\/` is simply `/`. */
export function escapeInlineStyle(css) {
  const escaped = css.replace(/<\/(style)/gi, "<\\/$1");
  if (/<!--/.test(escaped)) throw new Error('the stylesheet contains "<!--", which is unsafe inside <style>');
  return escaped;
}

function replaceMarker(template, marker, text) {
  const at = template.indexOf(marker);
  if (at < 0 || template.indexOf(marker, at + marker.length) >= 0) {
    throw new Error(`the template must contain ${marker} exactly once`);
  }
  // Spliced, not String.replace: a `$&` or `$'` in the code must stay as it is.
  return template.slice(0, at) + text + template.slice(at + marker.length);
}

/** The finished document: the template with the stylesheet and the script inlined. */
export function assemble(template, { css, js }) {
  const withStyle = replaceMarker(template, CSS_MARKER, escapeInlineStyle(css.trim()));
  return replaceMarker(withStyle, JS_MARKER, escapeInlineScript(js.trim()));
}

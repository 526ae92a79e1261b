// Looking like the host: its theme, its style variables and the space it gives the view.
//
// The stylesheet reads every host variable as `var(--name, fallback)` with its own light and
// dark fallbacks, so a host may pass all, some or none of them.

const FONT_STYLE_ID = "host-fonts";

/** "light" or "dark": the host's word if it gave one, else the system preference. */
export function resolveTheme(theme, prefersDark = false) {
  if (theme === "light" || theme === "dark") return theme;
  return prefersDark ? "dark" : "light";
}

/** Sets data-theme and color-scheme, so `light-dark()` in host variables resolves too. */
export function applyTheme(document, theme) {
  const root = document.documentElement;
  root.dataset.theme = theme;
  root.style.colorScheme = theme;
}

/** Host style variables become custom properties on :root; ones it drops are removed. */
export function applyStyleVariables(document, variables, previous = new Set()) {
  const root = document.documentElement;
  const applied = new Set();
  for (const [name, value] of Object.entries(variables ?? {})) {
    if (!name.startsWith("--") || typeof value !== "string" || !value) continue;
    root.style.setProperty(name, value);
    applied.add(name);
  }
  for (const name of previous) if (!applied.has(name)) root.style.removeProperty(name);
  return applied;
}

/** The host's @font-face rules, if any, in one style element of their own. */
export function applyHostFonts(document, css) {
  let style = document.getElementById(FONT_STYLE_ID);
  if (typeof css !== "string" || !css) {
    style?.remove();
    return;
  }
  if (!style) {
    style = document.createElement("style");
    style.id = FONT_STYLE_ID;
    document.head.append(style);
  }
  if (style.textContent !== css) style.textContent = css;
}

/**
 * Follows `containerDimensions` as the spec describes: a fixed height or width means fill the
 * container (and scroll inside it); a maximum means size to the content up to that maximum.
 */
export function applyContainerDimensions(document, dimensions) {
  const root = document.documentElement;
  const box = dimensions ?? {};
  const fixedHeight = typeof box.height === "number";
  const fixedWidth = typeof box.width === "number";
  root.style.height = fixedHeight ? "100vh" : "";
  root.style.maxHeight = !fixedHeight && box.maxHeight > 0 ? `${box.maxHeight}px` : "";
  root.style.width = fixedWidth ? "100vw" : "";
  root.style.maxWidth = !fixedWidth && box.maxWidth > 0 ? `${box.maxWidth}px` : "";
  // Content taller than a bounded frame scrolls inside the view instead of being cut off.
  root.dataset.bounded = fixedHeight || box.maxHeight > 0 ? "true" : "false";
}

/** Applies a whole host context; returns a function to apply the next one (it remembers variables). */
export function createThemer(document, prefersDark = () => false) {
  let variables = new Set();
  return function applyHostContext(context = {}) {
    applyTheme(document, resolveTheme(context.theme, prefersDark()));
    variables = applyStyleVariables(document, context.styles?.variables, variables);
    applyHostFonts(document, context.styles?.css?.fonts);
    applyContainerDimensions(document, context.containerDimensions);
  };
}

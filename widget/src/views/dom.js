// A tiny element builder. Text always goes in as text (textContent), never as HTML: names,
// reasons and error messages come from the server and a CSV, and must not become markup.

/**
 * h("button", {class: "job-cancel", type: "button", onclick: fn}, "Cancel")
 * Props: `class`, `text`, `on<event>` listeners, `hidden`/`disabled` booleans, anything else
 * as an attribute (null, undefined and false leave it out). Children: nodes or strings.
 */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") element.className = value;
    else if (name === "text") element.textContent = value;
    else if (name.startsWith("on") && typeof value === "function") element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child);
  }
  return element;
}

/** Sets text only when it differs, so live regions announce real changes only. */
export function setText(element, text) {
  if (element.textContent !== text) element.textContent = text;
}

// The bulk form: pick or drop the employee file, say the occasion and budget, start.
//
// Where a host cannot attach files to the chat, this is the way a file gets in. The view
// only collects; `onStart` does the sending and reports back through `showProblem` and
// `showBusy`, so the form stays a form.

import { formatUsd } from "../format.js";
import { fileProblem } from "../uploader.js";
import { h, setText } from "./dom.js";

/**
 * @param {object} options
 * @param {{occasion?: string, budgetPerPerson?: number, maxBytes?: number}} options.form what the tool said
 * @param {(start: {file: File, settings: object}) => void} options.onStart
 */
export function createFormView({ form, onStart }) {
  const maxBytes = typeof form?.maxBytes === "number" ? form.maxBytes : 0;
  let chosen = null;

  const input = h("input", { type: "file", id: "bulk-file", class: "visually-hidden", accept: ".csv,.tsv,.txt,text/csv,text/plain" });
  const fileName = h("span", { class: "drop-file", text: "No file chosen" });
  const drop = h(
    "label",
    { class: "drop-zone", for: "bulk-file" },
    h("span", { class: "drop-title", text: "Choose the employee file" }),
    h("span", { class: "drop-hint", text: "or drop a CSV here (name, department, interests, budget)" }),
    fileName,
  );
  const occasion = h("input", { type: "text", id: "bulk-occasion", class: "field-input", value: form?.occasion ?? "holiday" });
  const budget = h("input", {
    type: "number",
    id: "bulk-budget",
    class: "field-input",
    min: "1",
    step: "1",
    value: String(form?.budgetPerPerson ?? 50),
  });
  const problem = h("p", { class: "form-problem", role: "alert" });
  const busy = h("p", { class: "form-busy", role: "status", "aria-live": "polite" });
  // A button, not a form's submit: a sandboxed frame without allow-forms never fires submit.
  const start = h("button", { type: "button", class: "form-start", onclick: () => submit() }, "Start the analysis");

  function choose(file) {
    chosen = file ?? null;
    setText(fileName, chosen ? `${chosen.name} · ${(chosen.size / 1048576).toFixed(1)} MB` : "No file chosen");
    setText(problem, chosen ? fileProblem(chosen, maxBytes) ?? "" : "");
  }

  input.addEventListener("change", () => choose(input.files?.[0]));
  drop.addEventListener("dragover", (event) => {
    event.preventDefault();
    drop.classList.add("is-over");
  });
  drop.addEventListener("dragleave", () => drop.classList.remove("is-over"));
  drop.addEventListener("drop", (event) => {
    event.preventDefault();
    drop.classList.remove("is-over");
    choose(event.dataTransfer?.files?.[0]);
  });

  const element = h(
    "section",
    { class: "bulk-form", "aria-labelledby": "form-title" },
    h(
      "header",
      { class: "view-header" },
      h("h2", { class: "view-title", id: "form-title", text: "Gifts for everyone on a list" }),
      h("p", {
        class: "view-subtitle",
        text: maxBytes ? `A CSV of up to ${(maxBytes / 1048576).toFixed(0)} MB, one person per row.` : "A CSV, one person per row.",
      }),
    ),
    input,
    drop,
    h(
      "div",
      { class: "form-fields" },
      h("label", { class: "field", for: "bulk-occasion" }, h("span", { text: "Occasion" }), occasion),
      h("label", { class: "field", for: "bulk-budget" }, h("span", { text: "Budget per person (USD)" }), budget),
    ),
    problem,
    busy,
    h("div", { class: "job-actions" }, start),
  );

  function submit() {
    const why = fileProblem(chosen, maxBytes);
    const perPerson = Number(budget.value);
    if (why) return setText(problem, why);
    if (!(perPerson > 0)) return setText(problem, `Give a budget per person above ${formatUsd(0)}.`);
    setText(problem, "");
    onStart({ file: chosen, settings: { occasion: occasion.value.trim() || "holiday", budget_per_person: perPerson } });
  }

  return {
    element,
    showBusy(text) {
      start.disabled = Boolean(text);
      setText(busy, text ?? "");
    },
    showProblem(text) {
      start.disabled = false;
      setText(busy, "");
      setText(problem, text);
    },
  };
}

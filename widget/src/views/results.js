// The finished job's result: summary, search, and one page of people at a time.
//
// The search index is built once; each keystroke filters it and renders only the current
// page (25 rows), which keeps a 10,000-person result as quick as a 10-person one.

import { formatCount, formatUsd } from "../format.js";
import { PAGE_SIZE, buildSearchIndex, describeRange, filterPeople, paginate } from "../results-model.js";
import { h, setText } from "./dom.js";

const PROBLEMS_SHOWN = 50;

function stat(label, value) {
  return h("div", { class: "stat" }, h("dt", { text: label }), h("dd", { text: formatCount(value ?? 0) }));
}

function renderSummary(result) {
  const counts = result.summary ?? {};
  const people = counts.people ?? result.people.length;
  return h(
    "div",
    { class: "results-summary" },
    h(
      "dl",
      { class: "stats" },
      stat("People", people),
      stat("With gifts", counts.withGifts ?? result.people.filter((person) => person.gifts?.length).length),
      stat("Problems", counts.problems ?? result.problems?.length ?? 0),
    ),
  );
}

function renderProblems(problems) {
  if (!Array.isArray(problems) || problems.length === 0) return null;
  const shown = problems.slice(0, PROBLEMS_SHOWN);
  const more = problems.length - shown.length;
  return h(
    "details",
    { class: "results-problems" },
    h("summary", { text: problems.length === 1 ? "1 row had a problem" : `${formatCount(problems.length)} rows had problems` }),
    h(
      "ul",
      {},
      shown.map((problem) => h("li", { text: `Row ${problem.row}: ${problem.reason}` })),
      more > 0 ? h("li", { class: "more", text: `…and ${formatCount(more)} more` }) : null,
    ),
  );
}

function renderGiftItem(gift) {
  return h(
    "li",
    { class: "person-gift" },
    h("span", { class: "person-gift-name", text: String(gift.name ?? "") }),
    h("span", { class: "person-gift-price", text: formatUsd(gift.price) }),
  );
}

function renderPerson(person) {
  const gifts = Array.isArray(person.gifts) ? person.gifts : [];
  const interests = Array.isArray(person.interests) ? person.interests.join(", ") : "";
  return h(
    "li",
    { class: "person" },
    h(
      "div",
      { class: "person-head" },
      h("span", { class: "person-name", text: String(person.name ?? "") }),
      h("span", { class: "person-department", text: String(person.department ?? "") }),
    ),
    interests ? h("p", { class: "person-interests", text: interests }) : null,
    gifts.length
      ? h("ul", { class: "person-gifts", "aria-label": `Gifts for ${person.name}` }, gifts.map(renderGiftItem))
      : h("p", { class: "person-gifts person-note", text: person.note || "No gift fits." }),
    // Fewer gifts than asked for: the note says why, beside the ones there are.
    gifts.length && person.note ? h("p", { class: "person-note", text: person.note }) : null,
  );
}

/**
 * @param {object} result the job's result document ({people, problems, summary, ...})
 * @param {{pageSize?: number, onFullscreen?: (() => void)|null}} [options] `onFullscreen`: the
 *   host can show the view full screen, where a long result is easier to read
 */
export function renderResults(result, { pageSize = PAGE_SIZE, onFullscreen = null } = {}) {
  const index = buildSearchIndex(result.people);
  let query = "";
  let page = 1;

  const search = h("input", {
    type: "search",
    id: "results-search",
    class: "results-search",
    placeholder: "Search people, interests or gifts",
    autocomplete: "off",
    spellcheck: "false",
    "aria-controls": "results-list",
  });
  const count = h("p", { class: "results-count", id: "results-count", "aria-live": "polite" });
  const list = h("ul", { class: "people", id: "results-list", "aria-label": "People and their gifts", "aria-describedby": "results-count" });
  const previous = h("button", { type: "button", class: "page-prev", "aria-label": "Previous page" }, "‹ Previous");
  const next = h("button", { type: "button", class: "page-next", "aria-label": "Next page" }, "Next ›");
  const pageStatus = h("span", { class: "page-status" });

  function render() {
    const matching = filterPeople(index, query);
    const shown = paginate(matching, page, pageSize);
    page = shown.page;
    setText(count, describeRange(shown, index.length, query));
    setText(pageStatus, `Page ${formatCount(shown.page)} of ${formatCount(shown.pageCount)}`);
    previous.disabled = !shown.hasPrevious;
    next.disabled = !shown.hasNext;
    list.replaceChildren(...shown.items.map(renderPerson));
  }

  search.addEventListener("input", () => {
    query = search.value;
    page = 1;
    render();
  });
  previous.addEventListener("click", () => {
    page -= 1;
    render();
  });
  next.addEventListener("click", () => {
    page += 1;
    render();
  });

  const section = h(
    "section",
    { class: "job-results", "aria-labelledby": "results-title" },
    h("h3", { class: "section-title", id: "results-title", text: "Results" }),
    renderSummary(result),
    renderProblems(result.problems),
    h(
      "div",
      { class: "results-toolbar" },
      h("label", { class: "visually-hidden", for: "results-search", text: "Search people, departments, interests or gifts" }),
      search,
      onFullscreen
        ? h("button", { type: "button", class: "results-fullscreen", onclick: () => onFullscreen() }, "Full screen")
        : null,
    ),
    count,
    list,
    h("nav", { class: "pager", "aria-label": "Result pages" }, previous, pageStatus, next),
  );
  render();
  return section;
}

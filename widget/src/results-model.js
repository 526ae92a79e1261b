// Search and paging over a bulk result's people, with no DOM, so thousands of rows stay fast:
// the text to search is folded once per person, and a page only ever renders `pageSize` rows.

import { formatCount } from "./format.js";

export const PAGE_SIZE = 25;

/** Lower case without accents, so "jose" finds "José". */
export function fold(text) {
  return String(text ?? "")
    .normalize("NFD")
    .replace(/\p{M}/gu, "")
    .toLowerCase();
}

/** The search terms of a query: folded, split on white space, empty ones dropped. */
export function searchTerms(query) {
  return fold(query).split(/\s+/).filter(Boolean);
}

/** One entry per person: the person and the folded text a search looks in. */
export function buildSearchIndex(people) {
  return (Array.isArray(people) ? people : []).map((person) => {
    const gifts = Array.isArray(person?.gifts) ? person.gifts : [];
    const parts = [
      person?.name,
      person?.department,
      ...(Array.isArray(person?.interests) ? person.interests : []),
      ...gifts.flatMap((gift) => [gift?.name, gift?.category]),
    ];
    return { person, text: fold(parts.filter((part) => part != null).join("\n")) };
  });
}

/** The people whose name, department, interests or gifts contain every term of the query. */
export function filterPeople(index, query) {
  const terms = searchTerms(query);
  if (terms.length === 0) return index.map((entry) => entry.person);
  const found = [];
  for (const entry of index) {
    if (terms.every((term) => entry.text.includes(term))) found.push(entry.person);
  }
  return found;
}

/**
 * One page of `items`. `page` counts from 1 and is clamped into range, so a search that
 * shrinks the list never leaves the reader on a page that no longer exists.
 */
export function paginate(items, page, pageSize = PAGE_SIZE) {
  const total = items.length;
  const pageCount = Math.max(1, Math.ceil(total / pageSize));
  const current = Math.min(pageCount, Math.max(1, Math.trunc(Number(page)) || 1));
  const start = (current - 1) * pageSize;
  const end = Math.min(total, start + pageSize);
  return {
    page: current,
    pageCount,
    total,
    first: total === 0 ? 0 : start + 1,
    last: end,
    items: items.slice(start, end),
    hasPrevious: current > 1,
    hasNext: current < pageCount,
  };
}

/** "Showing 1–25 of 2,000 people", or for a search "Showing 1–3 of 3 people (of 2,000)". */
export function describeRange({ first, last, total }, allCount = total, query = "") {
  const terms = searchTerms(query);
  if (total === 0) {
    return terms.length ? `No people match “${query.trim()}”` : "No people in this result";
  }
  const noun = total === 1 ? "person" : "people";
  const shown = `Showing ${formatCount(first)}–${formatCount(last)} of ${formatCount(total)} ${noun}`;
  return terms.length && total !== allCount ? `${shown} (of ${formatCount(allCount)})` : shown;
}

// The gift view: one card per suggestion of `suggest_gifts`.

import { formatUsd } from "../format.js";
import { h } from "./dom.js";

function subtitle(args) {
  const parts = [];
  if (typeof args?.occasion === "string" && args.occasion) parts.push(`For a ${args.occasion}`);
  if (typeof args?.budget === "number") parts.push(`up to ${formatUsd(args.budget)}`);
  return parts.join(", ");
}

function renderGiftCard(gift) {
  return h(
    "li",
    { class: "gift-card" },
    h(
      "div",
      { class: "gift-top" },
      h("h3", { class: "gift-name", text: String(gift.name ?? "") }),
      h("p", { class: "gift-price", text: formatUsd(gift.price) }),
    ),
    h("p", { class: "gift-category", text: String(gift.category ?? "") }),
    h("p", { class: "gift-reason", text: String(gift.reason ?? "") }),
  );
}

/**
 * @param {object[]} gifts  @param {object|null} args the tool's input, for the subtitle
 * @param {string} [notice] what the cards cannot say, e.g. that no gift matches an interest
 */
export function renderGiftView(gifts, args, notice) {
  const note = subtitle(args);
  return h(
    "section",
    { class: "gifts", "aria-labelledby": "gifts-title" },
    h(
      "header",
      { class: "view-header" },
      h("h2", { class: "view-title", id: "gifts-title", text: gifts.length === 1 ? "1 gift idea" : `${gifts.length} gift ideas` }),
      note ? h("p", { class: "view-subtitle", text: note }) : null,
    ),
    notice ? h("p", { class: "gift-notice", role: "note", text: notice }) : null,
    h("ul", { class: "gift-list", "aria-label": "Gift suggestions" }, gifts.map(renderGiftCard)),
    gifts.length ? null : h("p", { class: "empty", text: "No gifts to suggest." }),
  );
}

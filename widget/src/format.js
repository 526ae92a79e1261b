// Numbers and times as people read them. Fixed to en-US: prices are in USD and the
// DOM contract promises "$24.99" and "2,000".

const usd = new Intl.NumberFormat("en-US", { style: "currency", currency: "USD" });
const count = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

/** 24.99 -> "$24.99"; "" when it is not a number. */
export function formatUsd(amount) {
  return typeof amount === "number" && Number.isFinite(amount) ? usd.format(amount) : "";
}

/** 2000 -> "2,000". */
export function formatCount(value) {
  return count.format(value);
}

/** 12.4 -> "about 12 s left", 150 -> "about 3 min left"; "" when unknown. */
export function formatEta(seconds) {
  if (typeof seconds !== "number" || !Number.isFinite(seconds) || seconds < 0) return "";
  if (seconds < 1) return "almost done";
  if (seconds < 90) return `about ${Math.round(seconds)} s left`;
  return `about ${Math.round(seconds / 60)} min left`;
}

/** An integer percentage for display and aria-valuenow: never above 100, never rounded up to it early. */
export function wholePercent(percentage) {
  if (typeof percentage !== "number" || !Number.isFinite(percentage)) return 0;
  return Math.min(100, Math.max(0, Math.floor(percentage)));
}

// The bulk analysis reports these stage names (giftgenius/bulk.py); others show as they come.
const STAGE_LABELS = {
  parse: "Reading the file",
  extract: "Reading interests",
  match: "Matching gifts",
  write: "Writing the results",
};

/** A stage name as a person reads it. */
export function stageLabel(stage) {
  if (typeof stage !== "string" || !stage) return "";
  // "receiving the file: 1.2 MB of 9.8 MB" reads best as it comes, capitalised.
  return STAGE_LABELS[stage] ?? stage.charAt(0).toUpperCase() + stage.slice(1);
}

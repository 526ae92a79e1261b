import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { buildSearchIndex, describeRange, filterPeople, fold, paginate, searchTerms } from "../src/results-model.js";

const PEOPLE = [
  { name: "José Álvarez", department: "Sales", interests: ["coffee", "cycling"], gifts: [{ name: "Pour-over kit", category: "kitchen" }] },
  { name: "Ana Lee", department: "Engineering", interests: ["books"], gifts: [{ name: "Reading lamp", category: "home" }] },
  { name: "Sam Stone", department: "Design", interests: ["hiking", "coffee"], gifts: [], note: "Nothing fits." },
  { name: "Li Wei", department: "Sales", interests: ["gaming"], gifts: [{ name: "Desk mat", category: "office" }] },
];
const index = buildSearchIndex(PEOPLE);
const names = (people) => people.map((person) => person.name);

describe("search", () => {
  test("folds case and accents", () => {
    assert.equal(fold("José ÁLVAREZ"), "jose alvarez");
    assert.deepEqual(searchTerms("  Pour-Over   KIT "), ["pour-over", "kit"]);
  });

  test("an empty query keeps everyone, in order", () => {
    assert.deepEqual(names(filterPeople(index, "   ")), names(PEOPLE));
  });

  test("finds by name, accents or not", () => {
    assert.deepEqual(names(filterPeople(index, "jose")), ["José Álvarez"]);
    assert.deepEqual(names(filterPeople(index, "ÁLVAREZ")), ["José Álvarez"]);
  });

  test("finds by department", () => {
    assert.deepEqual(names(filterPeople(index, "sales")), ["José Álvarez", "Li Wei"]);
  });

  test("finds by interest", () => {
    assert.deepEqual(names(filterPeople(index, "coffee")), ["José Álvarez", "Sam Stone"]);
  });

  test("finds by gift", () => {
    assert.deepEqual(names(filterPeople(index, "lamp")), ["Ana Lee"]);
  });

  test("needs every term to match", () => {
    assert.deepEqual(names(filterPeople(index, "coffee sales")), ["José Álvarez"]);
    assert.deepEqual(names(filterPeople(index, "coffee gaming")), []);
  });

  test("copes with missing fields", () => {
    const sparse = buildSearchIndex([{ name: "Only Name" }, {}, null]);
    assert.deepEqual(names(filterPeople(sparse, "only")), ["Only Name"]);
    assert.deepEqual(buildSearchIndex(undefined), []);
  });

  test("stays fast for ten thousand people", () => {
    const many = Array.from({ length: 10000 }, (_, i) => ({
      name: `Person ${i}`,
      department: `Dept ${i % 40}`,
      interests: ["coffee", `topic ${i % 97}`],
      gifts: [{ name: `Gift ${i % 300}`, category: "home" }],
    }));
    const started = performance.now();
    const big = buildSearchIndex(many);
    const found = filterPeople(big, "dept 7 topic");
    const elapsed = performance.now() - started;
    assert.ok(found.length > 0 && found.length < many.length);
    assert.ok(elapsed < 1500, `took ${elapsed} ms`);
  });
});

describe("paging", () => {
  const items = Array.from({ length: 2000 }, (_, i) => i + 1);

  test("shows 25 at a time", () => {
    const first = paginate(items, 1);
    assert.equal(first.items.length, 25);
    assert.deepEqual([first.first, first.last, first.pageCount], [1, 25, 80]);
    assert.equal(first.hasPrevious, false);
    assert.equal(first.hasNext, true);
  });

  test("the last page may be short", () => {
    const page = paginate(items.slice(0, 60), 3);
    assert.deepEqual(page.items, [51, 52, 53, 54, 55, 56, 57, 58, 59, 60]);
    assert.equal(page.hasNext, false);
  });

  test("clamps the page into range", () => {
    assert.equal(paginate(items, 0).page, 1);
    assert.equal(paginate(items, 999).page, 80);
    assert.equal(paginate(items, "nonsense").page, 1);
  });

  test("an empty list is one empty page", () => {
    const page = paginate([], 4);
    assert.deepEqual([page.page, page.pageCount, page.first, page.last, page.items.length], [1, 1, 0, 0, 0]);
  });

  test("describes the range shown", () => {
    assert.equal(describeRange(paginate(items, 1)), "Showing 1–25 of 2,000 people");
    assert.equal(describeRange(paginate(items, 80)), "Showing 1,976–2,000 of 2,000 people");
    assert.equal(describeRange(paginate([1], 1)), "Showing 1–1 of 1 person");
    assert.equal(describeRange(paginate([1, 2, 3], 1), 2000, "ana"), "Showing 1–3 of 3 people (of 2,000)");
    assert.equal(describeRange(paginate([], 1), 2000, " zzz "), "No people match “zzz”");
  });
});

"""A realistic employee CSV for the big bulk-job tests: varied people, interests and budgets.

The easy generators elsewhere (`test_bulk_job.employees`) give everyone one of a few dozen
interest pairs, so the analysis shares nearly all of its work and runs at one speed. A real
company's file does not: people list one to four interests from a long, uneven vocabulary
(a few catalog words are common, many are rare, some are not in the catalog at all), most
budgets are the company's tiers but some are blank (the default applies) and some are odd
whole amounts. That is what makes the match stage slow at first and quicker as the people it
has already matched recur, which is what the ETA and memory tests need to see. The text
is about 100 bytes a row, as an HR export with full names, an email column (which the
analysis ignores, as it ignores any extra column) and department names is.
"""

from __future__ import annotations

import csv
import io
import random

FIRST = (
    "Ada",
    "Amara",
    "Beatriz",
    "Carlos",
    "Chen",
    "Dmitri",
    "Elena",
    "Farah",
    "Gustav",
    "Hana",
    "Ibrahim",
    "Ingrid",
    "Jamal",
    "Keiko",
    "Lars",
    "Leila",
    "Mateo",
    "Mei",
    "Nadia",
    "Olu",
    "Priya",
    "Quentin",
    "Rosa",
    "Santiago",
    "Sven",
    "Tomasz",
    "Uma",
    "Valentina",
    "Wei",
    "Yusuf",
    "Zara",
)
LAST = (
    "Abernathy",
    "Bergström",
    "Castellanos",
    "Dubois",
    "Eriksen",
    "Fitzgerald",
    "Gonzalez",
    "Hashimoto",
    "Ivanova",
    "Jankowski",
    "Kowalczyk",
    "Lindqvist",
    "Montgomery",
    "Nakamura",
    "Okonkwo",
    "Petrovic",
    "Quinteros",
    "Rasmussen",
    "Schneider",
    "Takahashi",
    "Underwood",
    "Vasquez",
    "Whitfield",
    "Yamamoto",
    "Zielinski",
)
DEPARTMENTS = (
    "Customer Success",
    "Platform Engineering",
    "Finance & Accounting",
    "People Operations",
    "Product Design",
    "Sales (EMEA)",
    "Sales (Americas)",
    "Legal",
    "Data Science",
    "Facilities",
    "Marketing Communications",
    "Security",
    "Research",
    "Support",
    "",
)
#: Common first: the weights fall off along the list, as interest words in a real file do.
INTERESTS = (
    "coffee",
    "reading",
    "hiking",
    "cooking",
    "music",
    "travel",
    "gardening",
    "board games",
    "yoga",
    "photography",
    "tea",
    "running",
    "baking",
    "wine",
    "knitting",
    "astronomy",
    "programming",
    "camping",
    "painting",
    "video games",
    "science fiction",
    "dogs",
    "cats",
    "indoor plants",
    "fitness",
    "crafts",
    "home decor",
    "cycling",
    "chess",
    "podcasts",
    "fishing",
    "woodworking",
    "origami",
    "bird watching",
    "sailing",
    "calligraphy",
)
_WEIGHTS = tuple(1 / (rank + 1) for rank in range(len(INTERESTS)))
TIERS = (25, 40, 50, 75, 100)


def name_of(first: str, last: str, pick: random.Random) -> str:
    return f"{first} {pick.choice(FIRST)[0]}. {last}"


def staff_csv(rows: int, seed: int = 2026) -> str:
    """A CSV of `rows` employees, the same for the same seed."""
    pick = random.Random(seed)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["name", "email", "department", "interests", "budget"])
    for _ in range(rows):
        interests: dict[str, None] = {}
        for interest in pick.choices(INTERESTS, _WEIGHTS, k=pick.choice((1, 2, 2, 3, 3, 4))):
            interests.setdefault(interest, None)
        draw = pick.random()
        budget = "" if draw < 0.15 else str(pick.choice(TIERS)) if draw < 0.85 else str(pick.randint(20, 150))
        first, last = pick.choice(FIRST), f"{pick.choice(LAST)}-{pick.choice(LAST)}"
        email = f"{first}.{last}@example.com".lower()
        writer.writerow(
            [name_of(first, last, pick), email, pick.choice(DEPARTMENTS), "; ".join(interests), budget]
        )
    return out.getvalue()

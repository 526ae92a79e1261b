"""GiftGenius as an MCP server: the suggestion tool, the catalog resources, the card prompt.

The app logic lives in `catalog`, `suggest` and `congrats`; this module only says how
it appears over MCP, so the same functions can be tested without a protocol in sight.
"""

from __future__ import annotations

import time
from importlib import resources
from typing import Annotated, Any

import orjson
from pydantic import Field

from giftgenius.bulk import BulkInputError, analyze
from giftgenius.catalog import Catalog, load_catalog
from giftgenius.congrats import TONES, congrats_prompt
from giftgenius.suggest import OCCASIONS, NoFit, suggest_gifts
from herald import PromptResult, Server, ToolResult, ToolUI, Widget
from herald.content import message, text
from herald.runtime import JobContext, JobFailure

CATALOG_URI = "giftgenius://catalog"
CATEGORY_TEMPLATE = "giftgenius://catalog/{category}"

SUGGESTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "gifts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "price": {"type": "number", "minimum": 0},
                    "category": {"type": "string"},
                    "reason": {"type": "string"},
                },
                "required": ["name", "price", "category", "reason"],
                "additionalProperties": False,
            },
        },
        "notice": {
            "type": "string",
            "description": "Why the list is empty: what the widget shows where no text reaches it.",
        },
    },
    "required": ["gifts"],
    "additionalProperties": False,
}


def gifts_widget(domain: str | None = None) -> Widget:
    """The one view of GiftGenius: gift cards, and a bulk job's progress and result.

    The HTML is built from `widget/` in the repository (`make widget`) and shipped in the
    package, so serving needs no Node. `domain` is where a deployment serves it from.
    """
    html = resources.files("giftgenius").joinpath("widget", "gifts.html").read_text(encoding="utf-8")
    return Widget(
        "gifts",
        html,
        title="GiftGenius",
        description=(
            "Shows gift suggestions as cards, and a bulk analysis as a live progress bar followed by "
            "everyone's gifts. The model does not need to repeat what the widget shows."
        ),
        domain=domain,
    )


def build_server(catalog: Catalog | None = None, *, widget_domain: str | None = None) -> Server:
    """The GiftGenius server over the packaged catalog (or the one given, for tests)."""
    gifts = catalog or load_catalog()
    widget = gifts_widget(widget_domain)
    server = Server(
        "giftgenius",
        version="0.1.0",
        title="GiftGenius",
        instructions=(
            "GiftGenius suggests gifts from a curated catalog. Call suggest_gifts with the occasion, "
            "a budget in USD and a free-text description of the recipient; read gift_catalog for "
            "what is available; use the gift_congrats_style prompt to write the card."
        ),
    )

    @server.tool(
        name="suggest_gifts",
        title="Suggest gifts",
        output_schema=SUGGESTIONS_SCHEMA,
        annotations={
            "readOnlyHint": True,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": False,
        },
        ui=ToolUI(widget, invoking="Finding gifts…", invoked="Found gift ideas"),
    )
    def suggest(
        occasion: Annotated[str, Field(description="The occasion, e.g. birthday, wedding, retirement")],
        budget: Annotated[float, Field(gt=0, description="The most to spend on one gift, in USD")],
        recipient: Annotated[
            str, Field(min_length=1, description="Who the gift is for and what they love, in free text")
        ],
        count: Annotated[int, Field(ge=1, le=20, description="How many suggestions to return")] = 5,
    ) -> ToolResult:
        """Suggest gifts from the catalog that fit the occasion, the budget and the recipient's interests."""
        outcome = suggest_gifts(gifts, occasion=occasion, budget=budget, recipient=recipient, count=count)
        if isinstance(outcome, NoFit):
            # The structured twin of the text: ChatGPT's window.openai hands a widget only this.
            notice = {"gifts": [], "notice": outcome.message()}
            return ToolResult([text(outcome.message())], structured=notice, is_error=True)
        return ToolResult([text(outcome.to_text())], structured=outcome.to_structured())

    @server.resource(
        CATALOG_URI,
        name="gift_catalog",
        title="Gift catalog",
        description="Every gift GiftGenius knows: categories, price ranges and items.",
        mime_type="application/json",
    )
    def gift_catalog() -> dict[str, Any]:
        return gifts.to_json_dict()

    @server.resource_template(
        CATEGORY_TEMPLATE,
        name="gift_catalog_category",
        title="Gifts in one category",
        description="The catalog items of one category, with its price range.",
        mime_type="application/json",
        complete={"category": lambda prefix: [c for c in gifts.categories if c.startswith(prefix)]},
    )
    def gift_category(category: str) -> dict[str, Any]:
        items = gifts.in_category(category)
        if not items:
            raise KeyError(category)
        low, high = gifts.price_range(category)
        return {
            "category": category,
            "price_range": {"min": low, "max": high},
            "items": [gifts.item_json(item) for item in items],
        }

    @server.prompt(
        name="gift_congrats_style",
        title="Congratulations card",
        description="Write the message for the card that goes with the gift, in the tone you choose.",
        complete={
            "tone": lambda prefix: [tone for tone in TONES if tone.startswith(prefix)],
            "occasion": lambda prefix: [name for name in OCCASIONS if name.startswith(prefix)],
        },
    )
    def gift_congrats_style(
        recipient_name: Annotated[str, Field(description="Who the card is for")],
        occasion: Annotated[str, Field(description="The occasion, e.g. birthday")],
        tone: Annotated[str, Field(description=f"One of: {', '.join(TONES)}")] = "warm",
    ) -> PromptResult:
        system_message, user_template = congrats_prompt(recipient_name, occasion, tone)
        return PromptResult(
            description=f"A {tone} {occasion} card for {recipient_name}",
            # Prompts carry only user and assistant roles: the system guidance goes first, as the
            # instructions the user hands the model, and also in `_meta` for hosts that have a system slot.
            messages=[message("user", system_message), message("user", user_template)],
            meta={"giftgenius/systemMessage": system_message},
        )

    @server.job(
        name="start_bulk_gift_analysis",
        title="Bulk gift analysis",
        description=(
            "Pick gifts for everyone in a CSV of employees (header: name,department,interests,budget; "
            "interests separated by semicolons; budget optional). Answers at once with a job id; follow "
            "it with get_job_status. The result is a JSON resource with one suggestion list per person, "
            "plus a CSV export."
        ),
        ui=ToolUI(widget, invoking="Starting the bulk analysis…", invoked="Bulk analysis started"),
        resumable=True,
    )
    async def start_bulk_gift_analysis(
        ctx: JobContext,
        csv: Annotated[str, Field(description="The CSV text, header row first")],
        occasion: Annotated[str, Field(description="The occasion for everyone")] = "holiday",
        budget_per_person: Annotated[
            float, Field(gt=0, description="Budget in USD for people whose row has none")
        ] = 50.0,
    ) -> None:
        started = time.monotonic()

        async def progress(percentage: float, stage: str) -> None:
            elapsed = time.monotonic() - started
            eta = elapsed * (100 - percentage) / percentage if percentage > 0 else None
            await ctx.report_progress(
                percentage, stage, eta_seconds=round(eta, 1) if eta is not None else None
            )

        try:
            result = await analyze(
                csv,
                occasion=occasion,
                budget_per_person=budget_per_person,
                progress=progress,
                catalog=gifts,
                checkpoint=ctx.checkpoint,
                save=ctx.checkpoint,
                resume=ctx.resume_state,
            )
        except BulkInputError as problem:
            raise JobFailure(problem.code, problem.message, problem.hint) from None
        uri = await ctx.save_result("result.json", orjson.dumps(result.to_json()), "application/json")
        await ctx.save_result("result.csv", result.to_csv(), "text/csv")
        ctx.complete(uri, result.summary_text())

    return server

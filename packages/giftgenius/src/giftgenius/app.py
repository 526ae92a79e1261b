"""GiftGenius as an MCP server: the suggestion tool, the catalog resources, the card prompt.

The app logic lives in `catalog`, `suggest` and `congrats`; this module only says how
it appears over MCP, so the same functions can be tested without a protocol in sight.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Annotated, Any, Literal

from pydantic import Field

from giftgenius.bulk import BulkInputError, analyze
from giftgenius.catalog import Catalog, load_catalog
from giftgenius.congrats import TONES, congrats_prompt
from giftgenius.eta import EtaEstimator
from giftgenius.spreadsheet import decode_csv
from giftgenius.suggest import MIN_BUDGET, OCCASIONS, NoFit, SuggestionInputError, suggest_gifts
from herald import PromptResult, Server, ToolResult, ToolUI, Upload, Widget
from herald.content import message, text
from herald.jobs.documents import Packing
from herald.runtime import JobContext, JobFailure
from herald.server.files import DownloadFailed, DownloadPolicy, FileRef, download
from herald.server.uploads import UploadFailed, receive_upload

#: The bulk job reports progress at most this often within a stage (each stage's start and
#: the end always): a bar moves smoothly at ten steps a second, and a small file's job
#: makes a handful of events rather than one per row.
PROGRESS_EVERY_SECONDS = 0.1

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
            "description": (
                "What the list cannot do, in words: why it is empty, or which of the recipient's stated "
                "interests nothing in the catalog matches and what stands in for them. The widget shows it "
                "where no text reaches it."
            ),
        },
    },
    "required": ["gifts"],
    "additionalProperties": False,
}

# At least one non-space character. Only the JSON Schema carries the pattern: pydantic's regex engine
# counts U+0085 as a space and the validator's does not, and a value the schema lets through must not
# then fail conversion. The tool's own check catches whatever blank text the schema misses.
_NOT_BLANK: dict[str, Any] = {"pattern": r"\S"}


def _tool_error(message: str) -> ToolResult:
    """A tool error the model can act on, with the same words structured for widgets that see no text."""
    return ToolResult([text(message)], structured={"gifts": [], "notice": message}, is_error=True)


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


#: The clock a bulk job's time left is told by. A test of the estimate sets the process's
#: CPU time here, so the share of the machine other processes take is not what it judges.
CLOCK: Callable[[], float] = time.monotonic

#: The share of a bulk job's progress its download takes, when it has a file to download.
DOWNLOAD_SHARE = 5.0
#: Where the analysis ends and saving its result begins, in percent: writing out and
#: packing 100,000 people's gifts is a few seconds of a minute's job, and a bar that
#: stopped at 100% for them would make the time left a lie.
ANALYSED = 96.0
SAVING_STAGE = "saving the results"


def build_server(
    catalog: Catalog | None = None,
    *,
    widget_domain: str | None = None,
    downloads: DownloadPolicy | None = None,
) -> Server:
    """The GiftGenius server over the packaged catalog (or the one given, for tests);
    `downloads` says what fetching an attached employee file may do."""
    gifts = catalog or load_catalog()
    download_policy = downloads or DownloadPolicy()
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
        # No minLength or pattern here, unlike `recipient`: a blank occasion is answered by
        # the tool's own check, whose error lists the occasions it knows, where the schema's
        # could only say the text is too short.
        occasion: Annotated[
            str,
            Field(
                examples=list(OCCASIONS),
                description="The occasion, e.g. birthday, wedding, retirement; others are accepted too",
            ),
        ],
        budget: Annotated[
            float,
            Field(
                ge=MIN_BUDGET, description=f"The most to spend on one gift, in USD (at least {MIN_BUDGET})"
            ),
        ],
        recipient: Annotated[
            str,
            Field(
                min_length=1,
                json_schema_extra=_NOT_BLANK,
                description=(
                    "Who the gift is for, what they love and what they dislike, in free text, e.g. "
                    "'my dad, 60, loves hiking and coffee, hates board games'"
                ),
            ),
        ],
        count: Annotated[int, Field(ge=1, le=20, description="How many suggestions to return")] = 5,
        interests: Annotated[
            list[str] | None,
            Field(
                description=(
                    "The recipient's interests, one short phrase each, filled from everything the user said "
                    "in the conversation, e.g. ['fishing', 'vinyl records']; when given they replace the "
                    "interests read from recipient"
                )
            ),
        ] = None,
        avoid: Annotated[
            list[str] | None,
            Field(
                description=(
                    "What the recipient dislikes or must not get, filled from the conversation, e.g. "
                    "['alcohol', 'board games']; added to what recipient rules out"
                )
            ),
        ] = None,
        age: Annotated[
            int | None,
            Field(
                ge=0,
                le=130,
                description="The recipient's age in years if the conversation says it; overrides recipient",
            ),
        ] = None,
        age_group: Annotated[
            Literal["baby", "child", "teen", "adult", "senior"] | None,
            Field(
                description="The recipient's age group when the conversation implies one but no age; age wins"
            ),
        ] = None,
        relationship: Annotated[
            str | None,
            Field(
                description=(
                    "Who the recipient is to the user, from the conversation, e.g. 'boss', 'nephew', 'mom'; "
                    "overrides the one named in recipient"
                )
            ),
        ] = None,
    ) -> ToolResult:
        """Suggest gifts from the catalog that fit the occasion, the budget and the recipient's interests."""
        try:
            outcome = suggest_gifts(
                gifts,
                occasion=occasion,
                budget=budget,
                recipient=recipient,
                count=count,
                interests=interests,
                avoid=avoid,
                age=age,
                age_group=age_group,
                relationship=relationship,
            )
        except SuggestionInputError as problem:
            # Blank text the schema's pattern cannot see (Python strips more than \s): say what to send.
            return _tool_error(str(problem))
        if isinstance(outcome, NoFit):
            # The structured twin of the text: ChatGPT's window.openai hands a widget only this.
            return _tool_error(outcome.message())
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

    @server.tool(
        name="open_bulk_gift_form",
        title="Pick the employee file",
        annotations={"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False},
        ui=ToolUI(widget, invoking="Opening the form…", invoked="The form is open"),
    )
    def open_bulk_gift_form(
        occasion: Annotated[
            str, Field(description="The occasion for everyone, if the user said")
        ] = "holiday",
        budget_per_person: Annotated[
            float, Field(gt=0, description="Budget in USD for people whose row has none, if the user said")
        ] = 50.0,
    ) -> ToolResult:
        """Show the user a form in the GiftGenius widget to pick or drop the employee CSV and start
        the bulk gift analysis. Use it when the user wants gifts for a list of people but the file
        is not attached to the conversation (hosts that cannot attach files to a tool call)."""
        form = {
            "form": "bulk",
            "occasion": occasion,
            "budgetPerPerson": budget_per_person,
            "maxBytes": download_policy.max_bytes,
        }
        return ToolResult(
            [
                text(
                    "The widget shows a form: the user picks the employee file there and starts the analysis."
                )
            ],
            structured=form,
        )

    @server.job(
        name="start_bulk_gift_analysis",
        title="Bulk gift analysis",
        description=(
            "Pick gifts for everyone in a CSV of employees (header: name,department,interests,budget; "
            "budget optional). Comma-, semicolon- or tab-delimited, as the header shows; interests are "
            "separated by semicolons, or in a semicolon- or tab-delimited file by commas too. When the "
            "user attached the file, pass it as employees_file; otherwise pass its text as csv (one of "
            "the two, not both). Answers at once with a job id; follow it with get_job_status. The "
            "result is a JSON resource with one suggestion list per person, plus a CSV export."
        ),
        ui=ToolUI(widget, invoking="Starting the bulk analysis…", invoked="Bulk analysis started"),
        resumable=True,
        # It reads a list of people: where tokens are asked for, one must grant this too.
        scopes=["giftgenius:bulk"],
    )
    async def start_bulk_gift_analysis(
        ctx: JobContext,
        csv: Annotated[
            str | None,
            Field(
                description="The CSV text, header row first (text, not a workbook's bytes); or employees_file"
            ),
        ] = None,
        employees_file: Annotated[
            FileRef | None,
            Field(description="The employee CSV file the user attached; or csv with its text"),
        ] = None,
        upload: Annotated[
            Upload | None,
            Field(description="Set only by the GiftGenius widget, which then sends the file in parts"),
        ] = None,
        occasion: Annotated[str, Field(description="The occasion for everyone")] = "holiday",
        budget_per_person: Annotated[
            float, Field(gt=0, description="Budget in USD for people whose row has none")
        ] = 50.0,
    ) -> None:
        text = await employees_text(ctx, EmployeeFile(csv, employees_file, upload), download_policy)
        # After a download or an upload (its first DOWNLOAD_SHARE percent), the analysis has
        # the rest up to ANALYSED, and saving the result what is left.
        offset = DOWNLOAD_SHARE if csv is None else 0.0
        estimator = EtaEstimator(CLOCK(), offset)

        async def report(percentage: float, stage: str) -> None:
            eta = estimator.update(percentage, CLOCK())
            await ctx.report_progress(
                percentage, stage, eta_seconds=round(eta, 1) if eta is not None else None
            )

        async def progress(share: float, stage: str) -> None:
            await report(offset + share * (ANALYSED - offset) / 100, stage)

        try:
            result = await analyze(
                text,
                occasion=occasion,
                budget_per_person=budget_per_person,
                progress=progress,
                catalog=gifts,
                checkpoint=ctx.checkpoint,
                save=ctx.checkpoint,
                resume=ctx.resume_state,
                report_every=PROGRESS_EVERY_SECONDS,
            )
        except BulkInputError as problem:
            raise JobFailure(problem.code, problem.message, problem.hint) from None
        await report(ANALYSED + 0.5, SAVING_STAGE)
        # Tens of megabytes for a big file: packed as it is written, on a worker thread, as
        # the analysis ran; only the packed bytes are ever held.
        document, export = Packing("application/json"), Packing("text/csv")

        def write_out() -> None:
            result.write_json(document.write)
            result.write_csv(export.write)

        await asyncio.to_thread(write_out)
        uri = await ctx.save_packed_result("result.json", document)
        await ctx.save_packed_result("result.csv", export)
        ctx.complete(uri, result.summary_text())

    return server


@dataclass(frozen=True, slots=True)
class EmployeeFile:
    """How the employee list came: as text, as a file the host attached, or sent by the widget."""

    csv: str | None
    attached: FileRef | None
    upload: Upload | None

    def problem(self) -> str | None:
        """What is wrong with what was given, unless exactly one way was used."""
        given = [name for name, value in self._ways() if value is not None]
        if len(given) == 1:
            return None
        if not given:
            return (
                "Give the employee list as employees_file (an attached file) or csv (its text); neither came."
            )
        return f"Give the employee list one way only, not {' and '.join(given)} together."

    def _ways(self) -> list[tuple[str, object]]:
        return [("csv", self.csv), ("employees_file", self.attached), ("upload", self.upload)]


async def employees_text(ctx: JobContext, given: EmployeeFile, policy: DownloadPolicy) -> str:
    """The CSV text to analyse: given inline, downloaded from the file the user attached,
    or received in parts from the widget.

    Fetching the file is the job's first stage, its progress the bytes so far, so a large
    file shows movement from the start; a resumed job fetches it again (links last
    minutes, and a widget's parts stay beside the job).
    """
    mistake = given.problem()
    if mistake is not None:
        raise JobFailure(
            "bad_input",
            mistake,
            "Pass employees_file when the user attached the file, else the CSV text as csv.",
        )
    source: FileRef | Upload
    if given.attached is not None:
        source = given.attached
    elif given.upload is not None:
        source = given.upload
    else:
        return str(given.csv)
    verb = "downloading" if isinstance(source, FileRef) else "receiving"

    async def fetched(received: int, total: int | None) -> None:
        if ctx.resumed:  # a resumed job's progress is past the fetch: it only says it again
            return
        share = f" of {total / 1_048_576:.1f} MB" if total else ""
        percentage = DOWNLOAD_SHARE * received / total if total else 0.0
        await ctx.report_progress(percentage, f"{verb} the file: {received / 1_048_576:.1f} MB{share}")

    if not ctx.resumed:
        await ctx.report_progress(0, f"{verb} the file")
    try:
        if isinstance(source, FileRef):
            data = await download(source, policy, fetched)
        else:
            data = await receive_upload(ctx, source, fetched, max_bytes=policy.max_bytes)
    except (DownloadFailed, UploadFailed) as failed:
        raise JobFailure(failed.code, failed.message, failed.hint) from None
    try:
        return decode_csv(data, source.file_name or "The file").text
    except BulkInputError as problem:
        raise JobFailure(problem.code, problem.message, problem.hint) from None

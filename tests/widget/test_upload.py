"""The employee file picked or dropped on the widget: sent in parts through an MCP Apps host,
kept by ChatGPT's `uploadFile` under `window.openai`; then one bar from the file to the result,
which opens full screen where the host offers it.

A real browser, the real widget, the official AppBridge in the test host, and the real server.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Frame, Page, expect

from tests.widget.support import (
    JOB_TIMEOUT_MS,
    Console,
    GiftServer,
    HostPage,
    OpenAIPage,
    StaticServer,
    assert_clean,
    employees_csv,
    non_decreasing,
)

pytestmark = pytest.mark.slow  # a real browser (chromium) and the test host

#: Over 256 KiB, so the file goes in more than one part.
PEOPLE = 8_000
PART_BYTES = 256 * 1024


@pytest.fixture(scope="module")
def employee_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("upload") / "employees.csv"
    path.write_text(employees_csv(PEOPLE), encoding="utf-8")
    assert path.stat().st_size > PART_BYTES
    return path


def fill_and_start(frame: Frame, file: Path) -> None:
    form = frame.locator("section.bulk-form")
    expect(form).to_be_visible()
    expect(form.locator("#bulk-occasion")).to_have_value("birthday")
    frame.locator("#bulk-file").set_input_files(str(file))
    expect(form.locator(".drop-file")).to_have_text(re.compile(r"^employees\.csv · \d+\.\d MB$"))
    form.locator("#bulk-budget").fill("60")
    form.get_by_role("button", name="Start the analysis").click()


def finished_job(frame: Frame) -> None:
    job = frame.locator("section.job")
    expect(job).to_have_attribute("data-status", "completed", timeout=JOB_TIMEOUT_MS)
    expect(job.locator(".view-subtitle")).to_have_text("Occasion: birthday · $60.00 per person")
    expect(frame.locator(".results-count")).to_have_text(re.compile(r"of 8,000 people"))


def test_a_picked_file_goes_in_parts_through_the_host_and_one_bar_shows_it_all(
    host: HostPage, employee_file: Path
) -> None:
    host.run("open_bulk_gift_form", {"occasion": "birthday"})
    frame = host.frame
    host.record_valuenow()
    fill_and_start(frame, employee_file)
    finished_job(frame)

    calls = host.calls("app")
    starts = [call for call in calls if call.get("name") == "start_bulk_gift_analysis"]
    assert len(starts) == 1
    size = employee_file.stat().st_size
    assert starts[0]["arguments"]["upload"] == {
        "size": size,
        "file_name": "employees.csv",
        "mime_type": "text/csv",
    }
    parts = [call["arguments"]["index"] for call in calls if call.get("name") == "send_job_file_part"]
    assert parts == list(range(-(-size // PART_BYTES)))
    history = host.valuenow_history()
    assert non_decreasing(history), history
    job_id = frame.locator("section.job").get_attribute("data-job-id")
    events = host.server.job_status(str(job_id))["events"]
    said = [event["stage"] for event in events if event["type"] == "job.progress"]
    assert said[0] == "receiving the file"
    assert any(stage.startswith("receiving the file: ") for stage in said)

    steps = frame.locator("ol.job-steps > li")
    expect(steps).to_have_text(["File", "Read", "Interests", "Match", "Write"])
    expect(steps.first).to_have_attribute("data-state", "done")

    frame.get_by_role("button", name="Full screen").click()
    host.page.wait_for_function("() => testHost.displayModeRequests.length === 1")
    assert host.host("() => testHost.displayModeRequests") == ["fullscreen"]
    expect(frame.locator("html")).to_have_attribute("data-display-mode", "fullscreen")
    expect(frame.get_by_role("button", name="Full screen")).to_be_hidden()
    assert_clean(host)


def test_a_file_dropped_on_the_form_is_taken_as_a_picked_one(host: HostPage) -> None:
    host.run("open_bulk_gift_form", {"occasion": "birthday"})
    frame = host.frame
    text = employees_csv(3)
    frame.locator(".drop-zone").evaluate(
        """(zone, text) => {
          const data = new DataTransfer();
          data.items.add(new File([text], 'employees.csv', {type: 'text/csv'}));
          zone.dispatchEvent(new DragEvent('drop', {dataTransfer: data, bubbles: true, cancelable: true}));
        }""",
        text,
    )
    expect(frame.locator(".drop-file")).to_have_text("employees.csv · 0.0 MB")
    frame.get_by_role("button", name="Start the analysis").click()
    expect(frame.locator("section.job")).to_have_attribute("data-status", "completed", timeout=JOB_TIMEOUT_MS)
    expect(frame.locator(".results-count")).to_have_text(re.compile(r"of 3 people"))


def test_starting_without_a_file_says_so_and_sends_nothing(host: HostPage) -> None:
    host.run("open_bulk_gift_form", {})
    frame = host.frame
    frame.get_by_role("button", name="Start the analysis").click()
    expect(frame.locator(".form-problem")).to_have_text("Choose the employee file first.")
    assert [call.get("name") for call in host.calls("app")] == []


def test_window_openai_keeps_the_file_and_the_job_downloads_it(
    page: Page, console: Console, static: StaticServer, server: GiftServer, employee_file: Path
) -> None:
    widget = OpenAIPage(
        page, console, static, server, tool="open_bulk_gift_form", arguments={"occasion": "birthday"}
    )
    fill_and_start(page.main_frame, employee_file)
    finished_job(page.main_frame)

    uploads = widget.shim("() => openaiShim.uploads")
    assert [(upload["name"], upload["size"]) for upload in uploads] == [
        ("employees.csv", employee_file.stat().st_size)
    ]
    starts = [
        call for call in widget.shim("() => openaiShim.calls") if call["name"] == "start_bulk_gift_analysis"
    ]
    assert len(starts) == 1
    attached = starts[0]["arguments"]["employees_file"]
    assert attached["file_id"] == uploads[0]["fileId"]
    assert attached["download_url"].endswith(f"/uploads/{uploads[0]['fileId']}")
    job_id = page.locator("section.job").get_attribute("data-job-id")
    said = [
        event["stage"]
        for event in server.job_status(str(job_id))["events"]
        if event["type"] == "job.progress"
    ]
    assert said[0] == "downloading the file"

    page.get_by_role("button", name="Full screen").click()
    page.wait_for_function("() => openaiShim.displayModeRequests.length === 1")
    assert widget.shim("() => openaiShim.displayModeRequests") == ["fullscreen"]
    assert widget.shim("() => openaiShim.violations") == []
    assert widget.csp_violations() == []

"""``torchmsa serve``'s web page in headless Chromium (Selenium driving Debian's chromium and
chromedriver; skipped with the reason where either is missing): paste a family into the form,
submit, watch the queue, see the result through :mod:`torchmsa.view`, upload a file."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the service needs fastapi and uvicorn")
PIL = pytest.importorskip("PIL", reason="Pillow is needed to check the screenshot")
from browser import chromium  # noqa: E402
from PIL import Image  # noqa: E402

import torchmsa  # noqa: E402
from torchmsa.serve.server import start  # noqa: E402
from torchmsa.serve.store import Store  # noqa: E402

SOD = Path(__file__).parents[1] / "examples" / "superoxide_dismutase.fasta"
FAMILY = (
    ">alpha\nMKVLAAGIVALLLAAGCSSAKEE\n>beta\nMKVLSAGLVALLLSAGCSSAKDE\n"
    ">gamma\nMRVLAAGIVALLAGCSSAKEE\n>delta\nMKVLAAGIVGLLLAAGCSAKEEQ\n"
)


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium (:func:`browser.chromium`)."""
    yield from chromium(1300, 1000)


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    store = Store.open(None, data_dir=tmp_path_factory.mktemp("store"))
    srv = start(store, device="cpu")
    yield srv
    srv.stop()
    store.close()


def _wait(driver, script: str, timeout: float = 60.0):
    end = time.monotonic() + timeout
    while True:
        value = driver.execute_script(script)
        if value or time.monotonic() > end:
            assert value, f"timed out waiting for: {script}"
            return value
        time.sleep(0.05)


def _errors(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def _not_blank(png: bytes) -> None:
    img = Image.open(io.BytesIO(png)).convert("RGB")
    colours = img.getcolors(1 << 20)
    white = sum(c for c, rgb in colours if rgb == (255, 255, 255)) / (img.width * img.height)
    assert len(colours) > 20 and white < 0.9, (len(colours), white)


def _submitted(driver) -> str:
    """The id of the job the page selected after its submission."""
    _wait(driver, "return document.getElementById('message').className === 'ok'")
    return driver.execute_script("return window.serveUI.selected")


def _result_shown(driver, job_id: str) -> None:
    _wait(driver, f"return document.body.dataset.view === {job_id!r}", timeout=120)


def test_paste_submit_and_see_the_result(browser, service):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    browser.get(service.url + "/")
    _wait(browser, "return document.body.dataset.ready === '1'")
    browser.find_element(By.ID, "who").send_keys("erin")
    browser.find_element(By.ID, "fasta").send_keys(FAMILY)
    Select(browser.find_element(By.ID, "mode")).select_by_value("fast")
    browser.find_element(By.ID, "send").click()
    job_id = _submitted(browser)
    assert job_id and "queued" in browser.find_element(By.ID, "message").text
    _result_shown(browser, job_id)
    row = browser.find_element(By.CSS_SELECTOR, f'#jobs tr[data-id="{job_id}"]')
    assert "done" in row.text and "4" in row.text
    buttons = browser.find_elements(By.CSS_SELECTOR, "#downloads button")
    assert [b.get_attribute("data-format") for b in buttons] == [
        "fasta", "clustal", "stockholm", "phylip", "a3m", "newick",
    ]  # fmt: skip

    browser.switch_to.frame(browser.find_element(By.ID, "viewer"))
    try:
        _wait(browser, "return document.body.dataset.ready === '1'")
        names = browser.execute_script(
            "return [...document.querySelectorAll('#names div')].map((e) => e.textContent)"
        )
    finally:
        browser.switch_to.default_content()
    expected = torchmsa.align(io.StringIO(FAMILY), mode="fast", device="cpu")
    assert sorted(names) == sorted(expected.names)
    _not_blank(browser.get_screenshot_as_png())
    assert _errors(browser) == []


def test_upload_a_file_and_delete_the_job(browser, service):
    from selenium.webdriver.common.by import By

    browser.get(service.url + "/")
    _wait(browser, "return document.body.dataset.ready === '1'")
    who = browser.find_element(By.ID, "who")
    who.clear()
    who.send_keys("frank")
    browser.find_element(By.ID, "file").send_keys(str(SOD))
    browser.find_element(By.ID, "send").click()
    job_id = _submitted(browser)
    _result_shown(browser, job_id)
    info = browser.execute_script(f"return window.serveUI.jobs.find((j) => j.id === {job_id!r})")
    assert info["n_seqs"] == 9 and info["state"] == "done"
    # erin's job from the other test is not in frank's queue
    shown = browser.execute_script("return window.serveUI.jobs.map((j) => j.id)")
    assert shown == [job_id]
    browser.find_element(By.CSS_SELECTOR, f'#jobs tr[data-id="{job_id}"] button').click()
    _wait(browser, "return window.serveUI.jobs.length === 0")
    assert "deleted" in browser.find_element(By.ID, "message").text
    assert _errors(browser) == []

"""The web console in a real headless chromium (Debian's chromium and chromium-driver):
the operator's whole path, at desktop and phone widths, with no browser console error.

Screenshots of each page go to a temporary directory; set ENGRAM_CONSOLE_SCREENSHOTS=docs/console
to refresh the ones the documentation shows. Skipped where chromium is not installed.
"""

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.core.config import JobSettings
from tests.support.browser import CHROMIUM_PROGRAM, chromium
from tests.support.tools import needs

pytestmark = needs(
    CHROMIUM_PROGRAM, "chromedriver", install="apt-get install chromium chromium-driver"
)
WIDTHS = (1280, 390)
SCRIPT = (
    '<script>window.__ran = true; document.title = "ran"</script>'
    '<img src="x" onerror="window.__ran = true">'
)


@pytest.fixture
def live(serve: Callable[..., str]) -> str:
    """The app served on a loopback port with its job worker polling every 0.2 s."""
    return serve(
        jobs=JobSettings(worker_enabled=True, scheduler_enabled=False, poll_interval_seconds=0.2)
    )


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    """Where screenshots go."""
    target = Path(os.environ.get("ENGRAM_CONSOLE_SCREENSHOTS") or tmp_path)
    target.mkdir(parents=True, exist_ok=True)
    return target


def arrange(url: str, secret: str) -> dict[str, Any]:
    """An episode, the fact derived from it, a rule found helpful 5 times, a run, a ledger
    event with a reflection."""
    with httpx.Client(base_url=url, headers={"X-API-Key": secret}) as api:

        def post(path: str, **body: Any) -> dict[str, Any]:
            answer = api.post(path, json=body)
            assert answer.status_code in (200, 201, 202), answer.text
            return dict(answer.json())

        episode = post(
            "/v1/episodes",
            butler="support-desk",
            session_id="call-17",
            content="Ann said on the phone that she moved to Oslo last spring.",
        )
        entity = post("/v1/entities", canonical_name="Ann Berg", entity_type="person")
        fact = post(
            "/v1/facts",
            subject="Ann",
            predicate="lives_in",
            content="Ann lives in Oslo",
            source_episode_id=episode["id"],
            entity_id=entity["id"],
        )
        post(
            "/v1/links",
            source_type="fact",
            source_id=fact["id"],
            target_type="episode",
            target_id=episode["id"],
            relation="derived_from",
        )
        rule = post("/v1/rules", content="Offer Ann tea when she visits the office")
        for _ in range(5):
            post(f"/v1/rules/{rule['id']}/helpful")
        assert api.get(f"/v1/rules/{rule['id']}").json()["maturity"] == "established"
        run = post(
            "/v1/runs", task_id="greet-visitor", success=False, summary="Greeted Ann with coffee"
        )
        post(f"/v1/runs/{run['id']}/messages", role="critic", content="She drinks tea")
        post(f"/v1/runs/{run['id']}/feedback", source="critic", rating=0.2, rationale="tea")
        seen = post(
            "/v1/ledgers/town/events",
            agent_id="ann",
            kind="world.observed",
            turn=1,
            content="Rain over the harbour again",
        )
        post(
            "/v1/ledgers/town/agents/ann/reflections",
            belief="It rains a lot in this town",
            based_on=[seen["id"]],
        )
    return {"episode": episode, "fact": fact, "rule": rule, "entity": entity, "run": run}


def console_errors(driver: Any) -> list[str]:
    """The browser console's errors since the last call."""
    return [
        entry["message"]
        for entry in driver.get_log("browser")
        if entry["level"] in ("SEVERE", "ERROR")
    ]


def check_page(driver: Any, shots: Path, name: str, width: int = 1280) -> None:
    """No console error, nothing wider than the window; a screenshot."""
    assert console_errors(driver) == [], name
    assert driver.execute_script("return window.innerWidth") == width
    wide = driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
    assert wide <= 0, f"{name} is {wide}px wider than the window"
    driver.save_screenshot(str(shots / f"{name}.png"))


def click(driver: Any, *locator: str, within: Any = None) -> None:
    """Click a link or button and wait until the next page has loaded in place of this one."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    # A mark on the old page's window: it is gone once another document has loaded.
    # Asking about the old page's elements instead races the navigation, and chromium
    # may then answer with an inspector error rather than a stale element.
    driver.execute_script("window.clickedFrom = true")
    (within or driver).find_element(*locator).click()
    WebDriverWait(driver, 20, ignored_exceptions=(WebDriverException,)).until(
        lambda d: d.execute_script(
            "return window.clickedFrom === undefined && document.readyState === 'complete'"
        )
    )


def wait_for(driver: Any, condition: Any, what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)
        driver.refresh()


async def test_operator_path_in_a_real_browser(live: str, api_key_for: Any, shots: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    # The browser blocks this loop; the live server runs on its own thread.
    secret = await api_key_for("acme")
    ids = arrange(live, secret)
    with chromium(1280, 800) as driver:
        driver.get(f"{live}/ui")
        check_page(driver, shots, "sign-in")
        driver.find_element(By.ID, "api_key").send_keys(secret)
        click(driver, By.CSS_SELECTOR, "#sign-in button")
        assert "Recent jobs" in driver.page_source
        check_page(driver, shots, "overview")

        click(driver, By.LINK_TEXT, "Search")
        driver.find_element(By.ID, "q").send_keys("Where does Ann live?")
        click(driver, By.ID, "search")
        hits = driver.find_element(By.ID, "hits")
        assert "Ann lives in Oslo" in hits.text
        check_page(driver, shots, "search")
        click(driver, By.CSS_SELECTOR, f"a[href='/ui/facts/{ids['fact']['id']}']", within=hits)
        assert driver.current_url.endswith(f"/ui/facts/{ids['fact']['id']}")
        assert driver.find_element(By.ID, "memory-content").text == "Ann lives in Oslo"
        check_page(driver, shots, "fact")

        click(driver, By.CSS_SELECTOR, "#links a.link-end")
        assert driver.current_url.endswith(f"/ui/episodes/{ids['episode']['id']}")
        assert "moved to Oslo" in driver.find_element(By.ID, "memory-content").text
        assert f"/ui/facts/{ids['fact']['id']}" in driver.page_source  # and back
        check_page(driver, shots, "episode")

        driver.get(f"{live}/ui/rules/{ids['rule']['id']}")
        assert driver.find_element(By.ID, "maturity").text == "established"
        driver.find_element(By.ID, "reason").send_keys("Ann prefers coffee now")
        click(driver, By.ID, "harmful")
        assert driver.find_element(By.ID, "maturity").text == "candidate"
        assert "Ann prefers coffee now" in driver.page_source
        check_page(driver, shots, "rule")

        driver.get(f"{live}/ui/entities/{ids['entity']['id']}")
        assert driver.find_element(By.ID, "entity-graph").is_displayed()
        check_page(driver, shots, "entity")
        driver.get(f"{live}/ui/runs/{ids['run']['id']}")
        assert "She drinks tea" in driver.find_element(By.ID, "messages").text
        check_page(driver, shots, "run")
        driver.get(f"{live}/ui/data")
        check_page(driver, shots, "data")

        click(driver, By.LINK_TEXT, "Erase")
        Select(driver.find_element(By.ID, "selector")).select_by_value("subject")
        driver.find_element(By.ID, "value").send_keys("Ann")
        click(driver, By.ID, "preview")
        assert "Ann lives_in: Ann lives in Oslo" in driver.find_element(By.ID, "erase-preview").text
        check_page(driver, shots, "erase")
        click(driver, By.ID, "confirm-erase")
        wait_for(
            driver,
            lambda: '<dd id="job-status">succeeded</dd>' in driver.page_source,
            "the erasure job",
        )
        check_page(driver, shots, "job")
        driver.get(f"{live}/ui/search?q=Where+does+Ann+live")
        assert "Ann lives in Oslo" not in driver.find_element(By.ID, "hits").text
        driver.get(f"{live}/ui/facts/{ids['fact']['id']}")
        assert driver.find_element(By.ID, "error-detail").text.endswith("not found")
        console_errors(driver)  # the 404 itself is reported by the browser

        driver.get(f"{live}/ui")
        click(driver, By.ID, "sign-out")
        assert driver.find_element(By.ID, "api_key").is_displayed()
        driver.get(f"{live}/ui/search")
        assert driver.find_element(By.ID, "api_key").is_displayed()
        assert console_errors(driver) == []


async def test_every_page_fits_a_phone_and_a_desktop(
    live: str, api_key_for: Any, shots: Path
) -> None:
    from selenium.webdriver.common.by import By

    # The browser blocks this loop; the live server runs on its own thread.
    secret = await api_key_for("acme")
    ids = arrange(live, secret)
    pages = {
        "overview": "/ui",
        "search": "/ui/search?q=Ann+tea",
        "fact": f"/ui/facts/{ids['fact']['id']}",
        "episode": f"/ui/episodes/{ids['episode']['id']}",
        "rule": f"/ui/rules/{ids['rule']['id']}",
        "entities": "/ui/entities",
        "entity": f"/ui/entities/{ids['entity']['id']}",
        "runs": "/ui/runs",
        "run": f"/ui/runs/{ids['run']['id']}",
        "agents": "/ui/agents?ledger=town&agent_id=ann&turn=3&query=rain",
        "erase": "/ui/erase?selector=subject&value=Ann",
        "data": "/ui/data",
    }
    for width in WIDTHS:
        with chromium(width, 844 if width < 600 else 800) as driver:
            driver.get(f"{live}/ui")
            driver.find_element(By.ID, "api_key").send_keys(secret)
            click(driver, By.CSS_SELECTOR, "#sign-in button")
            for name, path in pages.items():
                driver.get(f"{live}{path}")
                assert driver.find_elements(By.TAG_NAME, "h1"), name
                check_page(driver, shots, f"{name}-{width}" if width != 1280 else name, width)


async def test_a_stored_script_never_runs(live: str, api_key_for: Any) -> None:
    from selenium.webdriver.common.by import By

    # The browser blocks this loop; the live server runs on its own thread.
    secret = await api_key_for("acme")
    with httpx.Client(base_url=live, headers={"X-API-Key": secret}) as api:
        fact = api.post(
            "/v1/facts", json={"subject": "<b>Ann</b>", "predicate": "note", "content": SCRIPT}
        ).json()
    with chromium() as driver:
        driver.get(f"{live}/ui")
        driver.find_element(By.ID, "api_key").send_keys(secret)
        click(driver, By.CSS_SELECTOR, "#sign-in button")
        for path in (f"/ui/facts/{fact['id']}", "/ui/search?q=window+ran+note"):
            driver.get(f"{live}{path}")
            assert driver.execute_script("return window.__ran === undefined")
            assert driver.title != "ran"
            assert driver.find_elements(By.TAG_NAME, "script") == []
            assert "<script>window.__ran" in driver.find_element(By.TAG_NAME, "main").text


async def test_a_pasted_link_with_a_query_opens_with_its_query_after_sign_in(
    live: str, api_key_for: Any
) -> None:
    from selenium.webdriver.common.by import By

    # The browser blocks this loop; the live server runs on its own thread.
    secret = await api_key_for("acme")
    with httpx.Client(base_url=live, headers={"X-API-Key": secret}) as api:
        assert (
            api.post(
                "/v1/facts",
                json={"subject": "Ann", "predicate": "city", "content": "Ann lives in Lyon"},
            ).status_code
            == 201
        )
    link = "/ui/search?q=Where+does+Ann+live+now%3F"
    with chromium() as driver:
        driver.get(f"{live}{link}")
        driver.find_element(By.ID, "api_key").send_keys(secret)
        click(driver, By.CSS_SELECTOR, "#sign-in button")
        assert driver.current_url == f"{live}{link}"
        assert driver.find_element(By.ID, "q").get_attribute("value") == (
            "Where does Ann live now?"
        )
        assert "Ann lives in Lyon" in driver.find_element(By.TAG_NAME, "main").text


LINES = """
const range = document.createRange();
range.selectNodeContents(arguments[0]);
return new Set(Array.from(range.getClientRects(), r => Math.round(r.top))).size;
"""


@pytest.mark.parametrize("width", WIDTHS)
async def test_the_overview_never_breaks_an_event_name_or_a_time(
    live: str, api_key_for: Any, shots: Path, width: int
) -> None:
    from selenium.webdriver.common.by import By

    # The browser blocks this loop; the live server runs on its own thread.
    secret = await api_key_for("acme")
    arrange(live, secret)
    with chromium(width, 900) as driver:
        driver.get(f"{live}/ui")
        driver.find_element(By.ID, "api_key").send_keys(secret)
        click(driver, By.CSS_SELECTOR, "#sign-in button")
        rows = driver.find_elements(By.CSS_SELECTOR, "table.events tbody tr")
        assert rows
        for row in rows:
            when, event = row.find_elements(By.TAG_NAME, "td")[:2]
            for cell in (when, event):
                assert driver.execute_script(LINES, cell) == 1, cell.text
        check_page(driver, shots, f"overview-{width}", width)

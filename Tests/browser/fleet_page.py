#!/usr/bin/python3
"""Drives taxifleet serve's live page in a real headless Chromium (Debian's chromium and
chromium-driver, python3-selenium), for TaxiFleetPageTests (Tests/IntegrationTests).

    fleet_page.py URL SIGNAL_DIR MOVING OTHER

Checks that the page shows both units online and writes SIGNAL_DIR/loaded (the test then pushes
the fleet's zones); that the zones appear on the map and the rollout shows version 1 applied by
both; that MOVING's taxi moves on the map; then writes SIGNAL_DIR/ready and waits for
SIGNAL_DIR/stopped (the test stopped OTHER) and checks that OTHER's row turns offline. All without
reloading the page. Prints what it saw and exits 0 only if all held.
"""
import os
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By


browser = None


def page_text():
    try:
        return browser.find_element(By.TAG_NAME, "body").text
    except Exception as error:
        return f"(unreadable: {error})"


def wait_for(what, condition, timeout_s=30):
    deadline = time.monotonic() + timeout_s
    last_error = None
    while time.monotonic() < deadline:
        try:
            value = condition()
            if value:
                print(f"ok: {what}", flush=True)
                return value
        except Exception as error:  # the element may not be there yet, or be redrawn meanwhile
            last_error = error
        time.sleep(0.1)
    raise SystemExit(f"timed out after {timeout_s} s waiting for {what} (last error: {last_error})\n"
                     f"the page showed:\n{page_text()}")


def main():
    global browser
    url, signal_dir, moving, other = sys.argv[1:5]
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"]:
        options.add_argument(argument)
    browser = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        browser.get(url)

        def row_online(unit):
            return browser.find_element(By.ID, f"row-{unit}").get_attribute("data-online")

        wait_for(f"{moving} and {other} online in the table",
                 lambda: row_online(moving) == "true" and row_online(other) == "true")
        navigations = browser.execute_script("return performance.getEntriesByType('navigation').length")
        open(os.path.join(signal_dir, "loaded"), "w").close()
        wait_for("the pushed zones on the map", lambda: browser.find_element(By.ID, "zone-garment"), 60)
        rollout = "fleet config version 1: held by 2 of 2 units; acks: applied 2"
        wait_for(f"the rollout: {rollout}", lambda: rollout in browser.find_element(By.ID, "rollout").text)

        def position():
            taxi = browser.find_element(By.ID, f"taxi-{moving}")
            return (taxi.get_attribute("data-lat"), taxi.get_attribute("data-lon"))

        first = wait_for(f"{moving}'s taxi on the map", position)
        wait_for(f"{moving}'s taxi to move from {first}", lambda: position() != first)

        open(os.path.join(signal_dir, "ready"), "w").close()
        wait_for("the test to stop the other unit", lambda: os.path.exists(os.path.join(signal_dir, "stopped")), 60)
        wait_for(f"{other} offline in the table", lambda: row_online(other) == "false")
        if browser.execute_script("return performance.getEntriesByType('navigation').length") != navigations:
            raise SystemExit("the page was reloaded")
        print("PASS", flush=True)
    finally:
        browser.quit()


if __name__ == "__main__":
    main()

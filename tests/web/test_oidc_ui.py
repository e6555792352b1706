"""Single sign-on in Chromium: the login page's "Sign in with Test IdP", the real provider's own
sign-in and consent pages, the UI as the mapped role, a refused user's page, and logout at both ends."""

from __future__ import annotations

import itertools

import pytest

from tests.support.oidc import provider_sign_in, sso_service
from tests.web.conftest import strict_page

_graphs = itertools.count()


@pytest.fixture(scope="module")
def sso(falkordb_server, celery_redis, tmp_path_factory):
    directory = tmp_path_factory.mktemp("sso-ui")
    with sso_service(falkordb_server, celery_redis, directory, f"sso_ui_{next(_graphs)}") as service:
        yield service


def test_sign_in_through_the_provider_as_a_steward_of_ods_and_out_again(browser, sso, tmp_path):
    with strict_page(browser, sso.url) as page:
        page.goto(sso.url + "/")
        button = page.wait_for_selector("[data-testid=sso-login]")
        assert button.inner_text() == "Sign in with Test IdP"
        assert page.locator("input[name=token]").count() == 1  # tokens still work beside it
        page.screenshot(path=str(tmp_path / "01-login.png"))

        provider_sign_in(page, "olga")
        page.wait_for_selector("[data-testid=role]")
        assert page.url.startswith(sso.url)
        assert page.inner_text("[data-testid=role]") == "steward"
        assert "(ods)" in page.inner_text("[data-testid=me]")
        assert page.request.get(f"{sso.url}/api/v1/me").json()["name"] == "olga"
        page.screenshot(path=str(tmp_path / "02-signed-in.png"))

        # logout: the provider asks, then sends the browser back to the login page
        page.click("header button:text('Log out')")
        page.wait_for_selector("button[name=logout][value=yes]")
        page.click("button[name=logout][value=yes]")
        page.wait_for_selector("[data-testid=sso-login]")
        assert page.url.startswith(sso.url)
        assert page.request.get(f"{sso.url}/api/v1/me").status == 401

        # the provider forgot the sign-in too: it asks for the login again
        page.click("[data-testid=sso-login]")
        page.wait_for_selector("input[name=login]")


def test_a_user_in_no_mapped_group_sees_why_and_gets_no_session(browser, sso):
    with strict_page(browser, sso.url) as page:
        page.goto(sso.url + "/")
        page.wait_for_selector("[data-testid=sso-login]")
        provider_sign_in(page, "nick")
        reason = page.wait_for_selector("#reason").inner_text()
        assert "nick is in no group that Watershed maps to a role" in reason
        assert page.request.get(f"{sso.url}/api/v1/me").status == 401

"""The HTTP app's settings are the service's (api/service/settings.py): named here for the app's
modules and the tests that build an app."""

from watershed.api.service.settings import ApiSettings

__all__ = ["ApiSettings"]

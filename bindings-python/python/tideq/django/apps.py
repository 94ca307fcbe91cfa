"""The Django app of tideq (``INSTALLED_APPS = [..., "tideq.django"]``): its management command
``tideq_worker``."""

from django.apps import AppConfig


class TideqConfig(AppConfig):
    name = "tideq.django"
    label = "tideq"
    verbose_name = "tideq"

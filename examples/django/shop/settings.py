"""A minimal Django 6 project whose tasks run on tideq (tests/django drives it)."""
import os

SECRET_KEY = "example-only"
DEBUG = False
USE_TZ = True
INSTALLED_APPS = ["tideq.django", "shop"]
DATABASES = {}

TASKS = {
    "default": {
        "BACKEND": "tideq.django.TideqBackend",
        "QUEUES": ["default", "receipts"],
        "OPTIONS": {
            "URL": os.environ.get("TIDEQ_REDIS_URL", "redis://127.0.0.1:6379"),
            # Each Django queue is the tideq queue "shop-<name>".
            "QUEUE_PREFIX": "shop-",
            "MAX_ATTEMPTS": 2,
        },
    }
}

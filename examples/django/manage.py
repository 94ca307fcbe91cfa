#!/usr/bin/env python
"""The example shop's manage.py: `python manage.py tideq_worker` runs its tideq workers."""
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "shop.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)

"""Seal every model endpoint token again with the first key of ``DYNATASK_SECRET_KEYS``."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from models_hub import services


class Command(BaseCommand):
    help = (
        "Encrypt every stored model endpoint token again with the first key of "
        "DYNATASK_SECRET_KEYS (after adding a new key in front, before dropping the old one; "
        "docs/security.md). Tokens no key decrypts are listed: their owners enter them again."
    )

    def handle(self, *args, **options):
        report = services.model_tokens_rotate()
        self.stdout.write(
            f"{report.rotated} token(s) encrypted again with the first key; "
            f"{report.sealed} token(s) stored unencrypted are now encrypted; "
            f"{len(report.unreadable)} token(s) cannot be decrypted."
        )
        for pk, name in report.unreadable:
            self.stderr.write(
                f"model {pk} ({name}): its token cannot be decrypted with any key of "
                "DYNATASK_SECRET_KEYS; its owner must enter it again"
            )

"""A campaign's signed link: ``/c/<signed token>/?<worker_id_param>=<id>``.

The token is signed with the site's secret (``django.core.signing``), so a link cannot be
forged from a guessed token; the platform's worker id follows in the query.
"""

from __future__ import annotations

import re

from django.core import signing
from django.urls import reverse

from annotation.models import Campaign
from core.errors import NotFound

SIGNING_SALT = "annotation.campaign.link"
EXTERNAL_ID_PATTERN = re.compile(r"^[A-Za-z0-9_.:@\-]{1,128}$")
PARAM_NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]{0,63}$")


def _signer() -> signing.Signer:
    return signing.Signer(salt=SIGNING_SALT)


def campaign_signed_token(campaign: Campaign) -> str:
    """Return ``<token>:<signature>``, the path part of the campaign's link."""
    return _signer().sign(campaign.token)


def campaign_link_path(campaign: Campaign) -> str:
    """Return the link to give the platform, ending with ``?<param>=`` for its worker id."""
    path = reverse("annotation:campaign_enter", kwargs={"signed": campaign_signed_token(campaign)})
    return f"{path}?{campaign.worker_id_param}="


def campaign_from_signed_token(signed: str) -> Campaign:
    """Return the active campaign of a signed token; NotFound if forged, unknown or closed."""
    try:
        token = _signer().unsign(signed)
    except signing.BadSignature:
        raise NotFound("This campaign link is not valid.", code="campaign.bad_link") from None
    campaign = (
        Campaign.objects.select_related("task", "round")
        .filter(token=token, is_active=True, task__active=True)
        .first()
    )
    if campaign is None:
        raise NotFound("This campaign is closed or does not exist.", code="campaign.closed")
    return campaign

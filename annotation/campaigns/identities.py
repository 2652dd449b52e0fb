"""Who may act as a campaign's worker id: session binding, release, signed worker links.

Binding: the first browser session that enters a campaign with a worker id binds that id.
The session holds a random binding token (``SESSION_BINDING_KEY``); the worker row holds its
SHA-256 (``CampaignWorker.binding_hash``). The token lives in the session's data, not in its
key, so it survives ``cycle_key`` and sign-in. Another session that brings the same id, with
no token or another one, is refused until an owner releases the id; after a release the next
session binds it anew. The claim is one conditional UPDATE (``binding_hash = ''``), so of two
first visits at once exactly one binds.

Signed worker links: a campaign may require every link to carry ``worker_sig``, a signature
of (campaign token, worker id) made with ``django.core.signing`` under its own salt. A link
without it, or with one made for another id or campaign, is refused. The id and the
signature are compared as separate values (never joined into one signed string, which a
separator inside the id could split elsewhere). Binding still applies.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import secrets
from collections.abc import Iterable, Iterator
from datetime import timedelta
from urllib.parse import urlencode

from django.core import signing
from django.db.models import F
from django.urls import reverse
from django.utils import timezone

from annotation.campaigns.links import EXTERNAL_ID_PATTERN, campaign_signed_token
from annotation.models import Campaign, CampaignWorker
from core.csv_export import csv_lines
from core.errors import NotFound, PermissionDenied, ServiceError

SESSION_BINDING_KEY = "campaign_binding_token"
WORKER_SIGNATURE_PARAM = "worker_sig"
WORKER_SIGNING_SALT = "annotation.campaign.worker_link"
# ``last_seen_at`` is written at most this often per worker, so work pages stay read-only.
LAST_SEEN_RESOLUTION = timedelta(minutes=5)
MAX_LINKS_PER_REQUEST = 5000
BOUND_WORKERS_SHOWN = 200


class WorkerIdInUse(PermissionDenied):
    """The worker id is bound to another browser session."""

    code = "campaign.worker_id_in_use"


class BadWorkerSignature(PermissionDenied):
    """The campaign needs signed worker links and this one is unsigned or altered."""

    code = "campaign.bad_worker_signature"


# --------------------------------------------------------------------------------------------
# Binding
# --------------------------------------------------------------------------------------------


def binding_token_new() -> str:
    return secrets.token_urlsafe(32)


def binding_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def binding_matches(worker: CampaignWorker, token: str | None) -> bool:
    """Return True when ``token`` is the one the worker id is bound to."""
    if not token or not worker.binding_hash:
        return False
    return hmac.compare_digest(worker.binding_hash, binding_digest(token))


def session_binding_token(session) -> str:
    """Return the session's binding token, or a new one (stored by ``session_bind``)."""
    token = session.get(SESSION_BINDING_KEY)
    if not isinstance(token, str) or not token:
        return binding_token_new()
    return token


def session_bind(session, token: str) -> None:
    """Keep ``token`` in the session once a worker id is bound to it."""
    session[SESSION_BINDING_KEY] = token


def campaign_worker_bind(worker: CampaignWorker, token: str) -> CampaignWorker:
    """Bind an unbound worker id to ``token``'s session, or check that it is already.

    WorkerIdInUse when another session holds it.
    """
    now = timezone.now()
    digest = binding_digest(token)
    if not worker.binding_hash:
        claimed = CampaignWorker.objects.filter(pk=worker.pk, binding_hash="").update(
            binding_hash=digest, bound_at=now, last_seen_at=now
        )
        if claimed:
            worker.binding_hash, worker.bound_at, worker.last_seen_at = digest, now, now
            return worker
        # Another session claimed it between our read and our write.
        worker.refresh_from_db(fields=["binding_hash", "bound_at", "last_seen_at"])
    if not binding_matches(worker, token):
        raise WorkerIdInUse(
            f"The worker id {worker.external_id} is already in use in another browser. "
            "Go on in the browser where you started, or ask the campaign's owner to release "
            "the id so that you can continue here.",
            details={"external_id": worker.external_id},
        )
    campaign_worker_seen(worker, now=now)
    return worker


def campaign_worker_seen(worker: CampaignWorker, *, now=None) -> None:
    """Record that the worker's browser came back (at most every ``LAST_SEEN_RESOLUTION``)."""
    now = now or timezone.now()
    if worker.last_seen_at is not None and now - worker.last_seen_at < LAST_SEEN_RESOLUTION:
        return
    CampaignWorker.objects.filter(pk=worker.pk).update(last_seen_at=now)
    worker.last_seen_at = now


def campaign_worker_release(campaign: Campaign, external_id: str) -> bool:
    """Release a worker id so that the next session binds it; False if it was not bound.

    The worker keeps its examples and progress; only the browser that may act as it changes.
    """
    external_id = (external_id or "").strip()
    workers = CampaignWorker.objects.filter(campaign=campaign, external_id=external_id)
    if not workers.exists():
        raise NotFound(
            f"No worker {external_id!r} in this campaign.", code="campaign.no_such_worker"
        )
    return bool(workers.exclude(binding_hash="").update(binding_hash="", bound_at=None))


def campaign_workers_release(queryset) -> int:
    """Release every bound worker id of ``queryset``; return how many were bound."""
    # By primary key: the admin's queryset may be DISTINCT, which UPDATE does not take.
    workers = CampaignWorker.objects.filter(pk__in=queryset.values("pk"))
    return workers.exclude(binding_hash="").update(binding_hash="", bound_at=None)


def campaign_bound_workers(campaign: Campaign, search: str = "", limit: int = BOUND_WORKERS_SHOWN):
    """The campaign's workers, most recently seen first (bound ones carry ``binding_hash``)."""
    workers = CampaignWorker.objects.filter(campaign=campaign)
    if search:
        workers = workers.filter(external_id__icontains=search)
    return list(
        workers.order_by(F("last_seen_at").desc(nulls_last=True), "-id").only(
            "external_id", "binding_hash", "created_at", "bound_at", "last_seen_at", "completed_at"
        )[:limit]
    )


# --------------------------------------------------------------------------------------------
# Signed worker links
# --------------------------------------------------------------------------------------------


def _worker_signer() -> signing.Signer:
    return signing.Signer(salt=WORKER_SIGNING_SALT)


def _signed_value(campaign: Campaign, external_id: str) -> str:
    # The campaign's token (unique, never reused) ties the signature to this campaign.
    return f"{campaign.token}/{external_id}"


def campaign_worker_signature(campaign: Campaign, external_id: str) -> str:
    """Return the signature of (campaign, worker id) that a signed worker link carries."""
    return _worker_signer().signature(_signed_value(campaign, external_id))


def campaign_worker_check_signature(
    campaign: Campaign, external_id: str, signature: str | None
) -> None:
    """Refuse (BadWorkerSignature) a link without a valid signature when the campaign needs one."""
    if not campaign.signed_worker_links:
        return
    if not signature:
        raise BadWorkerSignature(
            "This campaign needs a personal link: the link must carry the "
            f"{WORKER_SIGNATURE_PARAM} parameter made for your worker id. Open the link the "
            "crowd platform gave you, unchanged.",
            code="campaign.unsigned_worker_link",
        )
    # The worker id and the signature are checked as two values: joined into one signed
    # string, a link for "alice" carrying "smith:" + the signature of "alice:smith" would
    # pass, since the signer splits at its last separator.
    expected = campaign_worker_signature(campaign, external_id)
    if not hmac.compare_digest(signature.encode(), expected.encode()):
        raise BadWorkerSignature(
            f"The {WORKER_SIGNATURE_PARAM} of this link was not made for the worker id "
            f"{external_id} in this campaign. Open the link the crowd platform gave you, "
            "unchanged."
        )


def campaign_worker_link_path(campaign: Campaign, external_id: str) -> str:
    """Return the personal link of one worker (with its signature when the campaign needs it)."""
    path = reverse("annotation:campaign_enter", kwargs={"signed": campaign_signed_token(campaign)})
    query = {campaign.worker_id_param: external_id}
    if campaign.signed_worker_links:
        query[WORKER_SIGNATURE_PARAM] = campaign_worker_signature(campaign, external_id)
    return f"{path}?{urlencode(query)}"


def worker_ids_parse(text: str) -> list[str]:
    """Return the worker ids of ``text`` (one per line, or separated by commas or spaces).

    Every bad id is reported (``details["errors"]``: line, code, value); repeats count once.
    """
    ids: list[str] = []
    seen: set[str] = set()
    errors = []
    for line_number, line in enumerate((text or "").splitlines(), start=1):
        for value in line.replace(",", " ").split():
            if not EXTERNAL_ID_PATTERN.match(value):
                errors.append(
                    {"line": line_number, "code": "campaign.bad_worker_id", "value": value[:40]}
                )
            elif value not in seen:
                seen.add(value)
                ids.append(value)
    if not ids and not errors:
        errors.append({"line": 1, "code": "campaign.no_worker_ids", "value": ""})
    if len(ids) > MAX_LINKS_PER_REQUEST:
        errors.append({"line": None, "code": "campaign.too_many_worker_ids", "value": ""})
    if errors:
        raise ServiceError(
            "Some worker ids are not valid: use 1 to 128 letters, digits or _ . : @ - "
            f"per id, at most {MAX_LINKS_PER_REQUEST} ids.",
            code="campaign.bad_worker_ids",
            details={"errors": errors},
        )
    return ids


def campaign_worker_links_csv_lines(
    campaign: Campaign, external_ids: Iterable[str], base_url: str
) -> Iterator[str]:
    """Yield a CSV of personal links (``worker_id,link``), header first."""
    rows = (
        [external_id, f"{base_url}{campaign_worker_link_path(campaign, external_id)}"]
        for external_id in external_ids
    )
    return csv_lines(itertools.chain([("worker_id", "link")], rows))


def campaign_set_signed_links(campaign: Campaign, required: bool) -> None:
    Campaign.objects.filter(pk=campaign.pk).update(signed_worker_links=required)
    campaign.signed_worker_links = required

"""Ready a long-running process (a web worker, the live queue's worker) for its first request
or job.

Django builds the URL resolver (importing every view) and compiles each template on first
use: a web worker does it once, here. Then ``gc.freeze()`` moves every object allocated so
far, the loaded program, out of the garbage collector's generations. A full collection walked
them all (about 120,000 objects after the imports: 40-90 ms) with every thread of the process
stopped. In 40 s of the load test each gunicorn worker made 5-6 full collections: 650-910 ms
in all, the longest 200-283 ms, against 210-370 ms, the longest 53-81 ms, with the freeze
(wall time, one run each on a loaded machine). Objects made later are collected as before;
the frozen ones are freed as usual when nothing refers to them, only a cycle among them stays.
"""

from __future__ import annotations

import gc
import logging

from django.template.loader import get_template
from django.urls import get_resolver

logger = logging.getLogger(__name__)

# The pages a crowd hits: the create page, the verdict page, the validate page.
HOT_TEMPLATES = (
    "base.html",
    "annotation/create.html",
    "annotation/example.html",
    "annotation/_example_status.html",
    "annotation/validate.html",
)


def freeze_after_startup(templates: tuple[str, ...] = HOT_TEMPLATES) -> int:
    """Build the URL resolver and compile ``templates``, then freeze what is allocated;
    return how many objects are frozen. A warm-up that fails is logged, never raised: the
    first request builds the same things and reports the error where it belongs."""
    try:
        get_resolver().url_patterns  # noqa: B018 - imports every URL module and view
        for name in templates:
            get_template(name)
    except Exception:
        logger.warning("warm-up before the first request failed", exc_info=True)
    gc.collect()  # what the imports left behind is garbage, not program: do not freeze it
    gc.freeze()
    return gc.get_freeze_count()

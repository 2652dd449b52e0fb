"""Form fields every app uses."""

from __future__ import annotations

import json

from django import forms

from core.bounded_json import (
    MAX_JSON_DEPTH,
    BoundedJSONDecoder,
    JSONTooDeep,
    json_check_depth,
)


class BoundedJSONField(forms.JSONField):
    """Django's JSON form field, refusing text nested deeper than ``MAX_JSON_DEPTH`` levels.

    Django's field reads the text with ``json.loads``, which exhausts the stack on text nested
    deeply enough (a 500 instead of a form error). This one checks the depth first: on submit
    (error code ``too_deep``) and when a form with errors shows the text again. Invalid JSON
    is the code ``invalid``, with a message that names the line and column of the problem.
    """

    default_error_messages = {
        "too_deep": "Enter JSON nested at most %(limit)s levels deep (arrays and objects).",
        "invalid_at": "Enter a valid JSON: %(reason)s at line %(line)s, column %(column)s.",
    }

    def __init__(self, *, decoder=None, **kwargs):
        super().__init__(decoder=decoder or BoundedJSONDecoder, **kwargs)

    def to_python(self, value):
        if isinstance(value, str) and not self.disabled and value not in self.empty_values:
            try:
                json_check_depth(value)
                json.loads(value, cls=self.decoder)
            except JSONTooDeep:
                raise forms.ValidationError(
                    self.error_messages["too_deep"],
                    code="too_deep",
                    params={"limit": MAX_JSON_DEPTH},
                ) from None
            except json.JSONDecodeError as error:
                # Django's own message names no place; this one names the line and column.
                raise forms.ValidationError(
                    self.error_messages["invalid_at"],
                    code="invalid",
                    params={
                        "reason": error.msg.removesuffix(" at"),
                        "line": error.lineno,
                        "column": error.colno,
                    },
                ) from None
        return super().to_python(value)

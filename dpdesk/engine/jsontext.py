"""JSON text as users hand it to dpdesk (schema, history, request and query files, query arguments).

One decoder with one error form: ``WHERE: malformed JSON at line L column C: reason``, a
:class:`~dpdesk.engine.errors.DpdeskError` every front end shows as one line. Reading the file is
the caller's business (the engine touches no files).
"""

from __future__ import annotations

import json
from typing import Any

from dpdesk.engine.errors import DpdeskError

__all__ = ["parse_json"]


def parse_json(text: str, where: str, error: type[DpdeskError] = DpdeskError) -> Any:
    """Decode ``text``; malformed JSON raises ``error`` naming ``where`` and the position.

    Examples
    --------
    >>> parse_json('{"cells": 4}', "history.json")
    {'cells': 4}
    >>> parse_json('{"cells": ', "history.json")
    Traceback (most recent call last):
    ...
    dpdesk.engine.errors.DpdeskError: history.json: malformed JSON at line 1 column 11: Expecting value
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{where}: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise error(f"{where}: JSON nested too deeply to read") from None
    except ValueError as exc:  # an integer literal of more digits than Python converts (4 300)
        raise error(f"{where}: JSON holds a number too long to read ({str(exc).split(':')[0]})") from None

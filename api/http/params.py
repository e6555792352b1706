"""Path parameters that are not node ids (see nodes.py for those): what the schema says of them."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path

#: a run's id as its record shows it (`run_id`): any text; an unknown one is a 404
RunId = Annotated[
    str,
    Path(
        min_length=1,
        description="A run's id, as its record shows it (`run_id`, from the run list); unknown: 404.",
    ),
]

"""The benchmark scripts' output-file rules under their former import name (`from atomic_output
import ...` from scripts/): the code and its documentation are in bench/atomic_output.py."""

from bench.atomic_output import (  # noqa: F401
    OutputError,
    check_output,
    resolve_output,
    write_text_atomically,
)

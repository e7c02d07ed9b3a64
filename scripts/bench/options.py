"""Options given twice: argparse keeps the last value silently (`--jobs 1 --jobs 0` runs with 0);
the harness scripts refuse it as `segrank` does (cli/options.cpp refuse_repeated_options). An empty
path (`--json-out=`) is refused too (PATH_OPTIONS)."""

import argparse

# The options already given, kept on the namespace while argparse parses and removed after.
_GIVEN = "_options_given"

# Actions that may repeat: lists (--set, --ablate), counters, flags (a flag twice means the same),
# --help and --version.
_REPEATABLE = (
    argparse._AppendAction,
    argparse._AppendConstAction,
    argparse._CountAction,
    argparse._StoreConstAction,  # store_true / store_false too
    argparse._HelpAction,
    argparse._VersionAction,
)


def _once_call(self, parser, namespace, values, option_string=None):
    given = getattr(namespace, _GIVEN, None)
    if given is None:
        given = {}
        setattr(namespace, _GIVEN, given)
    shown = values if not isinstance(values, list) else " ".join(map(str, values))
    if self.dest in given:
        first, first_value = given[self.dest]
        parser.error(
            f"{option_string} given twice ({first} {first_value}, {option_string} {shown}); "
            "give it once"
        )
    given[self.dest] = (option_string, shown)
    super(type(self), self).__call__(parser, namespace, values, option_string)


def refuse_repeated_options(parser):
    """Makes every option of `parser` that takes one value an error (exit 2, naming the option and
    both values) when given twice. Lists (action "append"), counters and flags stay repeatable.
    Call after the last add_argument; parse with parse_args_once."""
    for action in parser._actions:
        if not action.option_strings or isinstance(action, _REPEATABLE):
            continue
        base = type(action)
        action.__class__ = type("Once" + base.__name__, (base,), {"__call__": _once_call})


# The path options of the harness scripts (dest -> what to give), refused when given empty
# (`--json-out=`, `--work ''`): an empty output path wrote nothing and still exited 0, an empty
# --work ended in a traceback. segrank refuses an empty path the same way ("--out: the path is
# empty").
PATH_OPTIONS = {
    "json_out": "a file path",
    "markdown": "a file path",
    "work": "a folder path",
    "shared_data": "a folder path",
    "segrank": "the path of a segrank binary",
    "recipe": "a file path",
}

# Other value options refused when empty: an empty one was taken as the default (bench_scale.py
# --mpirun '' used mpirun from PATH, bench_tune.py --cases '' ran every case).
VALUE_OPTIONS = {
    "mpirun": "the path or name of mpirun",
    "cases": "a comma list of cases",
}


def parse_args_once(parser, argv):
    """parser.parse_args(argv) with refuse_repeated_options applied; the namespace holds only the
    parser's options. A path option (PATH_OPTIONS) given as an empty string is an error (exit 2):
    "--json-out: the path is empty (give a file path)", before any work."""
    refuse_repeated_options(parser)
    o = parser.parse_args(argv)
    given = getattr(o, _GIVEN, None) or {}
    if hasattr(o, _GIVEN):
        delattr(o, _GIVEN)
    for dest, what in PATH_OPTIONS.items():
        if dest in given and getattr(o, dest, None) == "":
            parser.error(f"{given[dest][0]}: the path is empty (give {what})")
    for dest, what in VALUE_OPTIONS.items():
        if (
            dest in given
            and isinstance(getattr(o, dest, None), str)
            and not getattr(o, dest).strip()
        ):
            parser.error(f"{given[dest][0]}: the value is empty (give {what})")
    return o


# The limits segrank puts on the values the harness scripts pass it, so that a bad option is
# refused before any work instead of by the segrank command that finally receives it.
INT64_MAX = 2**63 - 1  # integer options and config keys of segrank are 64-bit (int64_t)
MAX_THREADS = 1024  # gnn/core/parallel.h kMaxThreads: --threads, train.threads
MAX_SYNTH_CONFIGS = 1_000_000  # hwmodel/synth/synth.h kMaxConfigs: segrank synth --configs
MAX_LAYOUT_CHOICES = 1000  # hwmodel/synth/synth.cpp: segrank synth --layout-choices


def int_range_error(option, value, lo, hi, passed_as):
    """None when lo <= value <= hi, else "<option>: expected <lo> to <hi> (<passed_as>), got
    <value>"; passed_as names what segrank receives (e.g. "segrank tune --batch")."""
    if lo <= value <= hi:
        return None
    return f"{option}: expected {lo} to {hi} ({passed_as}), got {value}"

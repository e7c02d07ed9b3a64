"""Output files of the Python scripts under the segrank binary's rules (util/atomic_file.h).

Shared by scripts/bench_scale.py and scripts/bench_quality.py (`from bench.atomic_output import
...`; Python 3 standard library only, so importing it does not need numpy). The policy, decided
before anything is written:
- a missing path or a regular file: the text goes to "<file>.tmp-<pid>" beside it, which is then
  renamed over it (readers never see a partial file; a failure leaves the old file as it was);
- a symbolic link (chains and dangling links included): followed; the file it points to is created
  or replaced as above and the link is kept;
- a character device (/dev/null, a terminal), or a path naming an open descriptor (/dev/stdout,
  /dev/fd/N, /proc/self/fd/N): written through in place, never replaced;
- a directory, FIFO (a named pipe: opening it would block until a reader comes, maybe forever),
  block device or socket: OutputError naming the path, and nothing is created;
- with `kind` given (an OutputKind), an existing non-empty regular file is replaced only when it is
  an earlier output of that kind (the binary's rule for its own outputs): a user's notes.md given as
  --markdown by mistake is refused, not overwritten;
- two outputs of one run (--json-out and --markdown) that name the same file, through symbolic
  links too, are refused before any work (check_distinct_outputs): the second would replace the
  first.
"""
import json
import os
import stat


class OutputError(Exception):
    """An output path that cannot be written; the message names the path and the reason."""


class OutputKind:
    """What an output file is, to recognize an earlier one: `what` names it in messages, `accepts`
    is a function of the file's text (at most its first 1 MiB) returning True for an earlier
    output."""

    def __init__(self, what, accepts):
        self.what = what
        self.accepts = accepts


HEAD_BYTES = 1 << 20


def json_output(benchmark):
    """The JSON document of script `benchmark`: an object whose "benchmark" member names it."""

    def accepts(text):
        try:
            doc = json.loads(text)
        except ValueError:
            return False
        return isinstance(doc, dict) and doc.get("benchmark") == benchmark

    return OutputKind(f'a {benchmark} JSON document ("benchmark": "{benchmark}")', accepts)


def markdown_output(benchmark, first_line):
    """The Markdown of script `benchmark`: its first non-empty line starts with `first_line`."""

    def accepts(text):
        lines = [line for line in text.splitlines() if line.strip()]
        return bool(lines) and lines[0].startswith(first_line)

    return OutputKind(f"a {benchmark} Markdown table (first line '{first_line}...')", accepts)


def _check_kind(path, target, kind):
    """OutputError unless the regular file `target` is empty or an earlier output of `kind`."""
    try:
        with open(target, "rb") as f:
            head = f.read(HEAD_BYTES + 1)
    except OSError as e:
        raise OutputError(f"'{path}': {e.strerror}") from None
    if not head.strip():
        return
    text = head.decode("utf-8", errors="replace")
    if len(head) > HEAD_BYTES or not kind.accepts(text):
        raise OutputError(
            f"'{path}' exists and is not {kind.what}; refusing to replace it (remove it, or "
            "choose another path)"
        )


def _names_descriptor(path):
    """True for /dev/stdout, /dev/fd/N, /proc/... and links that lead through /proc."""
    if os.path.abspath(path).startswith(("/proc/", "/dev/fd/", "/dev/std")):
        return True
    return os.path.realpath(path).startswith("/proc/")


def resolve_output(path, kind=None):
    """Returns (target, write_through): the file to create or replace (symlinks resolved), or the
    path to write in place. Raises OutputError naming `path` for a directory, block device, socket,
    a missing parent folder, an unreadable path, or (with `kind`) an existing file of another
    kind."""
    try:
        st = os.stat(path)  # follows symbolic links
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise OutputError(f"'{path}': {e.strerror}") from None
    if st is not None:
        if stat.S_ISCHR(st.st_mode) or _names_descriptor(path):
            return path, True
        if stat.S_ISDIR(st.st_mode):
            raise OutputError(f"'{path}' is a directory (expected a file path)")
        if stat.S_ISFIFO(st.st_mode):
            raise OutputError(
                f"'{path}' is a FIFO (named pipe), expected a regular file to write (a named "
                "pipe would block until a reader opens it; write to /dev/stdout and pipe that)"
            )
        if not stat.S_ISREG(st.st_mode):
            raise OutputError(f"'{path}' is not a regular file or character device")
        target = os.path.realpath(path)
        if kind is not None:
            _check_kind(path, target, kind)
        return target, False
    try:
        target = os.path.realpath(path, strict=False)  # a dangling link: the file it names
    except OSError as e:
        raise OutputError(f"'{path}': {e.strerror}") from None
    parent = os.path.dirname(target) or "."
    if not os.path.isdir(parent):
        raise OutputError(f"'{path}': the folder '{parent}' does not exist")
    return target, False


def check_output(path, kind=None):
    """resolve_output for its errors only: call it before any work so a bad path fails early."""
    resolve_output(path, kind)


def write_text_atomically(path, text, kind=None):
    """Writes `text` to `path` under the policy above. Raises OutputError naming `path` and the
    system's reason (full disk, /dev/full, permission denied) after removing the temporary file."""
    target, write_through = resolve_output(path, kind)
    if write_through:
        try:
            with open(path, "w") as f:
                f.write(text)
        except OSError as e:
            raise OutputError(f"'{path}': {e.strerror}") from None
        return
    tmp = f"{target}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, target)
    except OSError as e:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise OutputError(f"'{path}': {e.strerror}") from None


def check_distinct_outputs(paths):
    """OutputError when two of `paths` (a dict: option -> output path, None for an option not
    given) name the same file: the same real path, symbolic links followed (a file yet to be made
    included), so the second write would replace the first. Paths written through in place
    (/dev/null, /dev/stdout: resolve_output) may coincide. Call it before any work."""
    seen = {}
    for flag, path in paths.items():
        if not path:
            continue
        try:
            st = os.stat(path)
        except OSError:
            st = None
        if _names_descriptor(path) or (st is not None and stat.S_ISCHR(st.st_mode)):
            continue
        real = os.path.realpath(path)
        if real in seen:
            first, first_path = seen[real]
            via = "" if real in (path, first_path) else f" ('{real}')"
            raise OutputError(
                f"{first} '{first_path}' and {flag} '{path}' name the same file{via}; the "
                "second output would replace the first: give each its own path"
            )
        seen[real] = (flag, path)

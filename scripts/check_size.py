#!/usr/bin/env python3
"""Size check: C++ files over 500 lines and functions over 100 lines fail unless allow-listed.

Scans every tracked C++ file (*.h, *.cpp, *.cc; `git ls-files`, or every such file under the
root when it is not a git checkout) except the tests (tests/: test files grow with the cases
they hold and are split by feature already). Function extents come from universal-ctags
(`ctags --fields=+ne`: start and end line of each function definition; Debian's
universal-ctags, installed by scripts/install_deps.sh). Lambdas are counted as part of the
function that holds them, not on their own.

The allow-list (default scripts/size_allowlist.txt) has one entry per line,
`PATH  REASON` for a file or `PATH:FUNCTION  REASON` for a function, where FUNCTION is the name
as ctags reports it, qualified by its class for members (`Trainer::run`); overloads share an
entry. `#` starts a comment. An entry without a reason is an error; an entry that no longer
matches an oversized file or function is reported so it can be removed, but does not fail.

Usage: scripts/check_size.py [--root DIR] [--allowlist FILE] [--max-file-lines N]
                             [--max-function-lines N]
Exit: 0 when every oversized file and function is allow-listed, 1 when one is not (each is
printed with its size and the limit), 2 on bad arguments, a bad allow-list or a ctags failure.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

CPP_SUFFIXES = (".h", ".cpp", ".cc")
EXCLUDED_TOP = ("tests",)


def fail(message):
    print(f"check_size: {message}", file=sys.stderr)
    sys.exit(2)


def cpp_files(root):
    """Relative paths of the C++ files to check, sorted."""
    # A worktree has a .git file, a clone a .git folder.
    inside_git = os.path.exists(os.path.join(root, ".git"))
    if inside_git:
        out = subprocess.run(
            ["git", "-C", root, "ls-files", "--", "*.h", "*.cpp", "*.cc"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        paths = [p for p in out.splitlines() if p]
    else:
        paths = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if not d.startswith((".", "build"))]
            for name in filenames:
                if name.endswith(CPP_SUFFIXES):
                    paths.append(os.path.relpath(os.path.join(dirpath, name), root))
    return sorted(p for p in paths if p.split("/", 1)[0] not in EXCLUDED_TOP)


def read_allowlist(path, required):
    """{key: reason} from the allow-list file; {} when it is absent and not required."""
    if not os.path.exists(path):
        if required:
            fail(f"{path}: no such allow-list file")
        return {}
    entries = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            parts = text.split(None, 1)
            if len(parts) < 2:
                expected = "expected PATH[:FUNCTION] REASON"
                fail(f"{path}:{number}: '{parts[0]}' has no reason ({expected})")
            if parts[0] in entries:
                fail(f"{path}:{number}: '{parts[0]}' is listed twice")
            entries[parts[0]] = parts[1]
    return entries


def function_sizes(root, files):
    """[(key, lines)] for every function definition ctags finds in `files` (lambdas left out)."""
    if not files:
        return []
    ctags = shutil.which("ctags")
    if ctags is None:
        fail("ctags not found (scripts/install_deps.sh installs universal-ctags)")
    proc = subprocess.run(
        [ctags, "--output-format=json", "--fields=+neK", "--kinds-C++=f", "--language-force=C++"]
        + ["-o", "-"]
        + files,
        cwd=root,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        fail(f"ctags failed (exit {proc.returncode}): {proc.stderr.strip()}")
    sizes = []
    for line in proc.stdout.splitlines():
        try:
            tag = json.loads(line)
        except json.JSONDecodeError:
            fail(f"ctags printed a line that is not JSON: {line[:200]}")
        if tag.get("_type") != "tag" or tag.get("kind") != "function" or "end" not in tag:
            continue
        if tag["name"].startswith("__anon"):  # a lambda: part of the function that holds it
            continue
        name = tag["name"]
        if tag.get("scopeKind") in ("class", "struct", "union"):
            name = tag["scope"].rsplit("::", 1)[-1] + "::" + name
        sizes.append((f"{tag['path']}:{name}", tag["end"] - tag["line"] + 1))
    return sizes


def main():
    parser = argparse.ArgumentParser(
        description="C++ files over --max-file-lines and functions over --max-function-lines "
        "fail unless listed with a reason in the allow-list (tests/ excluded)."
    )
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    parser.add_argument("--allowlist", help="default: ROOT/scripts/size_allowlist.txt")
    parser.add_argument("--max-file-lines", type=int, default=500)
    parser.add_argument("--max-function-lines", type=int, default=100)
    args = parser.parse_args()
    if args.max_file_lines < 1 or args.max_function_lines < 1:
        parser.error("--max-file-lines and --max-function-lines must be at least 1")
    root = os.path.abspath(args.root)
    if not os.path.isdir(root):
        fail(f"--root {args.root}: not a directory")
    allow_path = args.allowlist or os.path.join(root, "scripts", "size_allowlist.txt")
    allowed = read_allowlist(allow_path, required=args.allowlist is not None)

    files = cpp_files(root)
    oversized = []  # (key, lines, limit, what)
    for path in files:
        with open(os.path.join(root, path), "rb") as f:
            lines = sum(1 for _ in f)
        if lines > args.max_file_lines:
            oversized.append((path, lines, args.max_file_lines, "file"))
    for key, lines in function_sizes(root, files):
        if lines > args.max_function_lines:
            oversized.append((key, lines, args.max_function_lines, "function"))

    new = [o for o in oversized if o[0] not in allowed]
    stale = sorted(set(allowed) - {o[0] for o in oversized})
    for key in stale:
        print(f"check_size: note: {key} is no longer oversized; remove it from {allow_path}")
    for key, lines, limit, what in new:
        print(f"check_size: {key}: {what} of {lines} lines (limit {limit}), not allow-listed")
    if new:
        print(
            f"check_size: {len(new)} oversized, not allow-listed; split them, or list them in "
            f"{allow_path} with a reason",
            file=sys.stderr,
        )
        return 1
    print(
        f"check_size: {len(files)} files, {len(oversized)} oversized files and functions, "
        f"all allow-listed"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

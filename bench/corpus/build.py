"""Rebuild the corpus of public projects with custom gradients from manifest.tsv.

    python bench/corpus/build.py [--mirrors DIR] [--only OWNER/NAME ...] [--dest DIR] [--jobs N]
    python bench/corpus/build.py --manifest heldout.tsv ...   # the held-out set, into src-heldout/

Each manifest row names a repository, the commit the corpus was taken at and the files kept (git
pathspec-style globs, ``;``-separated). The files land in ``src/<owner>+<name>/`` beside this
script (gitignored: none of their code is ever committed here). With ``--mirrors DIR`` they come
from local git directories ``DIR/<owner>+<name>`` (a bare repository, or one with ``repo/`` or
``repo/.git`` inside); otherwise the commit alone is fetched from https://github.com/OWNER/NAME.

Python files over ``MAX_BYTES`` are left out: the linter needs the project's modules (call sites
and ``tf.function`` callers live in other files), not generated tables. Notebooks that are kept
are converted to scripts (code cells in order, each IPython magic or shell escape turned into
``pass`` with the line as a comment), so the linter sees them as the notebook would run top to
bottom.

Idempotent: a repository whose folder already records its commit and file list is left alone.
Errors are one line per repository; the run ends with a summary line and exits 1 if any failed.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import fnmatch
import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "manifest.tsv"
MAX_BYTES = 1_000_000
STAMP = ".corpus-stamp"
# kept beside the Python files: they make a folder an installable package (the linter's trace
# context treats a library's public functions as traceable by its users)
PROJECT_FILES = ("pyproject.toml", "setup.cfg", "setup.py")
CHUNK = 500  # paths per `git archive` call, well under any argv limit


@dataclass(frozen=True)
class Entry:
    repo: str
    commit: str
    patterns: tuple[str, ...]

    @property
    def folder(self) -> str:
        return self.repo.replace("/", "+")


class BuildError(Exception):
    """A repository could not be built; the message is the one line the user sees."""


def default_src(manifest: Path) -> Path:
    """Where a manifest's projects live: ``src/`` for manifest.tsv, ``src-<stem>/`` for another one
    (so the held-out set never mixes with the tuned-on corpus)."""
    return HERE / ("src" if manifest.name == MANIFEST.name else f"src-{manifest.stem}")


def resolve_manifest(path: Path) -> Path:
    # a bare name (``heldout.tsv``) means the file beside this script
    return path if path.exists() or path.parent != Path(".") else HERE / path


def read_manifest(path: Path) -> list[Entry]:
    entries = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split("\t")
        if cells[0] == "repo":  # header
            continue
        if len(cells) != 3:
            raise SystemExit(f"{path.name}:{number}: expected 3 tab-separated columns, got {len(cells)}")
        repo, commit, paths = cells
        entries.append(Entry(repo, commit, tuple(p for p in paths.split(";") if p)))
    return entries


def git(git_dir: Path, *args: str) -> bytes:
    proc = subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True)
    if proc.returncode:
        message = proc.stderr.decode(errors="replace").strip().splitlines()
        raise BuildError(f"git {args[0]}: {message[-1] if message else 'failed'}")
    return proc.stdout


def find_mirror(mirrors: Path, entry: Entry) -> Path:
    base = mirrors / entry.folder
    for candidate in (base / "repo" / ".git", base / "repo", base / ".git", base):
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    raise BuildError(f"no git directory under {base}")


def clone_commit(entry: Entry, scratch: Path) -> Path:
    """Fetch just the manifest's commit (GitHub serves any reachable commit by hash)."""
    git_dir = scratch / "git"
    subprocess.run(["git", "init", "-q", "--bare", str(git_dir)], check=True, capture_output=True)
    git(git_dir, "fetch", "-q", "--depth=1", f"https://github.com/{entry.repo}.git", entry.commit)
    return git_dir


def matches(path: str, patterns: tuple[str, ...]) -> bool:
    # fnmatch's `*` crosses `/`, so `**/*.py` and `*.py` both mean "any .py file in the tree";
    # a top-level-only file is named in full.
    return any(fnmatch.fnmatchcase(path, p) or fnmatch.fnmatchcase(path, p.removeprefix("**/")) for p in patterns)


def select_files(git_dir: Path, entry: Entry) -> list[str]:
    listing = git(git_dir, "ls-tree", "-r", "-l", "-z", entry.commit).decode(errors="surrogateescape")
    chosen = []
    for record in filter(None, listing.split("\0")):
        meta, path = record.split("\t", 1)
        kind, size = meta.split()[1], meta.split()[3]
        # a size that is not a number is a blob the copy lacks (mirrors may drop huge files)
        if kind != "blob" or not size.isdigit() or int(size) > MAX_BYTES:
            continue
        if matches(path, entry.patterns) or path in PROJECT_FILES:
            chosen.append(path)
    if not chosen:
        raise BuildError(f"no file at {entry.commit[:12]} matches {';'.join(entry.patterns)}")
    return sorted(chosen)


def _silence(line: str) -> str:
    # a magic or shell escape becomes `pass`, kept at its indentation: alone in a block
    # (`try:` then `%tensorflow_version 2.x`) a comment would leave the block empty
    body = line.lstrip()
    return f"{line[:len(line) - len(body)]}pass  # {body}"


def notebook_to_script(raw: bytes) -> bytes:
    cells = json.loads(raw).get("cells", [])
    chunks = []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else source
        lines = [_silence(line) if line.lstrip().startswith(("%", "!")) else line for line in text.splitlines()]
        chunks.append("\n".join(lines))
    return ("\n\n# %%\n".join(chunks) + "\n").encode()


def extract(git_dir: Path, entry: Entry, files: list[str], dest: Path) -> int:
    written = 0
    for start in range(0, len(files), CHUNK):
        blob = git(git_dir, "archive", "--format=tar", entry.commit, "--", *files[start:start + CHUNK])
        with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
            for member in tar.getmembers():
                if not member.isfile():
                    continue
                data = tar.extractfile(member).read()
                name = member.name
                if name.endswith(".ipynb"):
                    try:
                        data, name = notebook_to_script(data), name + ".py"
                    except ValueError as error:
                        raise BuildError(f"{name}: not a notebook ({error})") from None
                target = dest / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                written += 1
    return written


def stamp_text(entry: Entry, files: list[str]) -> str:
    return json.dumps({"commit": entry.commit, "patterns": entry.patterns, "max_bytes": MAX_BYTES, "files": files})


def is_current(folder: Path, entry: Entry) -> bool:
    stamp = folder / STAMP
    if not stamp.is_file():
        return False
    try:
        recorded = json.loads(stamp.read_text())
    except ValueError:
        return False
    return recorded.get("commit") == entry.commit and tuple(recorded.get("patterns", ())) == entry.patterns \
        and recorded.get("max_bytes") == MAX_BYTES and (folder / ".git").is_dir()


def build_one(entry: Entry, dest_root: Path, mirrors: Path | None) -> tuple[str, int]:
    """Return ("built" | "current", number of files)."""
    folder = dest_root / entry.folder
    if is_current(folder, entry):
        return "current", len(json.loads((folder / STAMP).read_text())["files"])
    with tempfile.TemporaryDirectory(prefix="corpus-") as scratch:
        git_dir = find_mirror(mirrors, entry) if mirrors else clone_commit(entry, Path(scratch))
        git(git_dir, "cat-file", "-e", f"{entry.commit}^{{commit}}")
        files = select_files(git_dir, entry)
        staging = Path(scratch) / "out"
        count = extract(git_dir, entry, files, staging)
        (staging / STAMP).write_text(stamp_text(entry, files))
        # a repository of its own, as a clone is: the linter finds each project's root by it
        subprocess.run(["git", "init", "-q", str(staging)], check=True, capture_output=True)
        if folder.exists():
            shutil.rmtree(folder)
        folder.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staging), folder)
    return "built", count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=Path, help="folder of local git directories named owner+name")
    parser.add_argument("--dest", type=Path, help="output folder (default: src/ here, or src-<stem>/ for "
                        "another manifest)")
    parser.add_argument("--manifest", type=Path, default=MANIFEST, help="manifest.tsv (default) or heldout.tsv")
    parser.add_argument("--only", nargs="+", metavar="OWNER/NAME", help="build just these repositories")
    parser.add_argument("--jobs", type=int, default=2, help="repositories built at once (default 2)")
    args = parser.parse_args(argv)

    args.manifest = resolve_manifest(args.manifest)
    if not args.manifest.is_file():
        parser.error(f"no manifest at {args.manifest}")
    args.dest = args.dest or default_src(args.manifest)
    entries = read_manifest(args.manifest)
    if args.only:
        unknown = set(args.only) - {e.repo for e in entries}
        if unknown:
            parser.error(f"not in the manifest: {', '.join(sorted(unknown))}")
        entries = [e for e in entries if e.repo in args.only]

    tally = {"built": 0, "current": 0, "failed": 0}
    files = 0
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futures = {pool.submit(build_one, e, args.dest, args.mirrors): e for e in entries}
        for future in concurrent.futures.as_completed(futures):
            entry = futures[future]
            try:
                state, count = future.result()
            except (BuildError, OSError, ValueError, subprocess.SubprocessError) as error:
                tally["failed"] += 1
                print(f"{entry.repo}: error: {error}", file=sys.stderr)
                continue
            tally[state] += 1
            files += count
    print(f"{len(entries)} repositories: {tally['built']} built, {tally['current']} up to date, "
          f"{tally['failed']} failed; {files} files in {args.dest}")
    return 1 if tally["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())

"""Checks that the relative links of README.md and docs/ resolve.

Every Markdown link or image `[text](target)` outside code whose target is
not a URL must name a file or folder of the repository, and its `#anchor`,
if any, a heading of the Markdown file it names (GitHub's anchors:
lowercase, punctuation dropped, spaces as hyphens, repeats numbered).
Prints each broken link as `file:line: target: why` and exits 1 if any.
"""

import re
import sys
from pathlib import Path

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
HTML_ID = re.compile(r"""<a\s+(?:name|id)=["']([^"']+)["']""")


def lines_outside_code(text, blank_code_spans=True):
    """(number, line) of the lines outside fenced and indented code blocks,
    with inline code spans blanked unless asked to keep them."""
    fenced = False
    previous_blank = True
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        blank = not line.strip()
        indented = line.startswith("    ") or line.startswith("\t")
        if fenced or (indented and previous_blank and not line.lstrip().startswith(("-", "*", "|"))):
            # An indented block stays one while its lines stay indented.
            previous_blank = blank or indented
            continue
        previous_blank = blank
        yield number, re.sub(r"`[^`]*`", "``", line) if blank_code_spans else line


def slug(heading):
    heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    heading = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return heading.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        found, seen = set(), {}
        for _, line in lines_outside_code(path.read_text(encoding="utf-8"), False):
            match = HEADING.match(line)
            if match:
                base = slug(match.group(1))
                count = seen.get(base, 0)
                seen[base] = count + 1
                found.add(base if count == 0 else f"{base}-{count}")
            found.update(HTML_ID.findall(line))
        cache[path] = found
    return cache[path]


def check(root):
    files = [root / "README.md"] + sorted((root / "docs").rglob("*.md"))
    broken = []
    for source in files:
        for number, line in lines_outside_code(source.read_text(encoding="utf-8")):
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                    continue  # a URL (https:, mailto:, ...)
                path_part, _, anchor = target.partition("#")
                where = f"{source.relative_to(root)}:{number}: {target}"
                dest = (source.parent / path_part).resolve() if path_part else source
                if not dest.exists():
                    broken.append(f"{where}: no such file")
                elif root.resolve() not in dest.resolve().parents and dest.resolve() != root.resolve():
                    broken.append(f"{where}: outside the repository")
                elif anchor:
                    if dest.suffix != ".md" or dest.is_dir():
                        broken.append(f"{where}: an anchor into a file that is not Markdown")
                    elif anchor not in anchors(dest):
                        broken.append(f"{where}: no heading with that anchor in {dest.relative_to(root.resolve())}")
    return files, broken


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    files, broken = check(root)
    for line in broken:
        print(line)
    print(f"{len(files)} files, {len(broken)} broken links")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())

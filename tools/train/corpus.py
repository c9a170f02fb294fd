#!/usr/bin/env python3
"""The King James Bible as plain text, split by book into training and validation.

Source: Debian's bible-kjv (the `bible` program) and bible-kjv-text (the
text), public domain. `bible -l100000 Ge1:1-Re22:21` prints the whole book:
a heading per chapter ("1 Samuel 3"), a blank line, then one line per verse
("  N text"). We keep the verses only, one per line, without their numbers,
and drop the chapter headings: the model should learn the prose, not a
reference index (31,102 verse numbers and 1,189 headings would be ~5 % of the
tokens, all predictable from their neighbours, flattering the perplexity);
the split is by whole books, so no heading is needed to find a boundary.

Validation: twelve whole books, about 5 % of the text, spread over the Old
Testament's narrative, wisdom, poetry and prophets and the New Testament's
epistles. None has a parallel text elsewhere (unlike Kings/Chronicles or the
synoptic gospels), so the validation text is not near-duplicated in training.

Checks: all 66 books in canonical order, each with its canonical chapter
count, 1,189 chapters and 31,102 verses in all; the verse numbers of each
chapter run 1, 2, 3, ...

Writes (stdlib only, deterministic):
  --valid FILE   the validation text (committed as tests/data/kjv/valid.txt)
  --train FILE   the training text; .xz compresses it (for the GPU machine)
  --check FILE   instead of writing, compare FILE with the validation text
"""
import argparse
import lzma
import os
import re
import subprocess
import sys

# The 66 books as `bible` names them, with their chapter counts.
BOOKS = [
    ("Genesis", 50), ("Exodus", 40), ("Leviticus", 27), ("Numbers", 36), ("Deuteronomy", 34),
    ("Joshua", 24), ("Judges", 21), ("Ruth", 4), ("1 Samuel", 31), ("2 Samuel", 24),
    ("1 Kings", 22), ("2 Kings", 25), ("1 Chronicles", 29), ("2 Chronicles", 36), ("Ezra", 10),
    ("Nehemiah", 13), ("Esther", 10), ("Job", 42), ("Psalms", 150), ("Proverbs", 31),
    ("Ecclesiastes", 12), ("Song of Solomon", 8), ("Isaiah", 66), ("Jeremiah", 52),
    ("Lamentations", 5), ("Ezekiel", 48), ("Daniel", 12), ("Hosea", 14), ("Joel", 3), ("Amos", 9),
    ("Obadiah", 1), ("Jonah", 4), ("Micah", 7), ("Nahum", 3), ("Habakkuk", 3), ("Zephaniah", 3),
    ("Haggai", 2), ("Zechariah", 14), ("Malachi", 4),
    ("Matthew", 28), ("Mark", 16), ("Luke", 24), ("John", 21), ("Acts", 28), ("Romans", 16),
    ("1 Corinthians", 16), ("2 Corinthians", 13), ("Galatians", 6), ("Ephesians", 6),
    ("Philippians", 4), ("Colossians", 4), ("1 Thessalonians", 5), ("2 Thessalonians", 3),
    ("1 Timothy", 6), ("2 Timothy", 4), ("Titus", 3), ("Philemon", 1), ("Hebrews", 13),
    ("James", 5), ("1 Peter", 5), ("2 Peter", 3), ("1 John", 5), ("2 John", 1), ("3 John", 1),
    ("Jude", 1), ("Revelation", 22),
]
N_VERSES = 31102

# Validation books (OT: 7, NT: 5), in canonical order.
VALID = ["Ruth", "Esther", "Ecclesiastes", "Lamentations", "Amos", "Jonah", "Micah",
         "Galatians", "Philippians", "James", "1 Peter", "1 John"]

HEADING = re.compile(r"^(\S.*) (\d+)$")   # "1 Samuel 3"
VERSE = re.compile(r"^  (\d+) (.*)$")      # "  12 And ..."


def dump_bible():
    """The `bible` program's text of the whole KJV."""
    env = dict(os.environ, COLUMNS="100000")  # no wrapping of long verses
    r = subprocess.run(["bible", "-l100000", "Ge1:1-Re22:21"], capture_output=True, text=True,
                       env=env)
    if r.returncode != 0:
        sys.exit(f"corpus: `bible` failed ({r.returncode}): {r.stderr.strip()} "
                 "(apt-get install bible-kjv bible-kjv-text)")
    return r.stdout


def parse(dump):
    """{book: [verse text, ...]} in canonical order; exits on any surprise."""
    books, chapters = {}, {}
    book, chapter, last_verse = None, None, 0
    for n, line in enumerate(dump.split("\n"), 1):
        if not line.strip():
            continue
        if m := HEADING.match(line):
            book, chapter = m.group(1), int(m.group(2))
            if chapter != chapters.get(book, 0) + 1:
                sys.exit(f"corpus: line {n}: {book} {chapter} out of order")
            chapters[book] = chapter
            books.setdefault(book, [])
            last_verse = 0
        elif m := VERSE.match(line):
            if book is None or int(m.group(1)) != last_verse + 1:
                sys.exit(f"corpus: line {n}: verse {m.group(1)} out of order in {book} {chapter}")
            last_verse += 1
            text = " ".join(m.group(2).split())  # a few verses end with a space
            if not text:
                sys.exit(f"corpus: line {n}: empty verse")
            books[book].append(text)
        else:
            sys.exit(f"corpus: line {n}: neither a heading nor a verse: {line[:80]!r}")
    want = [b for b, _ in BOOKS]
    if list(books) != want:
        missing = [b for b in want if b not in books]
        extra = [b for b in books if b not in want]
        sys.exit(f"corpus: books differ from the canon: missing {missing}, unexpected {extra}")
    for b, nc in BOOKS:
        if chapters[b] != nc:
            sys.exit(f"corpus: {b} has {chapters[b]} chapters, the canon {nc}")
    nv = sum(len(v) for v in books.values())
    if nv != N_VERSES:
        sys.exit(f"corpus: {nv} verses, the KJV has {N_VERSES}")
    return books


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--valid", help="write the validation text here")
    ap.add_argument("--train", help="write the training text here (.xz: compressed)")
    ap.add_argument("--check", help="compare this file with the validation text")
    args = ap.parse_args()

    books = parse(dump_bible())
    text = {b: "".join(v + "\n" for v in books[b]) for b in books}
    valid = "".join(text[b] for b in books if b in VALID)
    train = "".join(text[b] for b in books if b not in VALID)
    total = len(valid) + len(train)
    print(f"corpus: 66 books, {sum(len(v) for v in books.values())} verses, {total} bytes; "
          f"validation {len(VALID)} books, {len(valid)} bytes ({100 * len(valid) / total:.2f} %), "
          f"{len(valid.split())} words; training {len(train)} bytes, {len(train.split())} words")
    if args.check:
        with open(args.check, encoding="utf-8") as f:
            same = f.read() == valid
        print(f"corpus: {args.check} {'equals' if same else 'DIFFERS FROM'} the validation text")
        return 0 if same else 1
    if args.valid:
        with open(args.valid, "w", encoding="utf-8", newline="\n") as f:
            f.write(valid)
    if args.train:
        data = train.encode("utf-8")
        if args.train.endswith(".xz"):
            data = lzma.compress(data, preset=9)
        with open(args.train, "wb") as f:
            f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Turn what users hand to ``add_knowledge`` into text: files, folders, raw text and URLs.

Supported files: plain text and Markdown (and similar text formats), HTML and PDF (through
pypdf, a maintained pure-Python library). Anything that cannot be read raises
``KnowledgeSourceError`` naming the source and what to do, before anything is added.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from ..._internal.redaction import redact_text, redact_url
from ...errors import KnowledgeSourceError, install_line

TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown", ".rst", ".text", ".csv", ".json"})
HTML_SUFFIXES = frozenset({".html", ".htm"})
PDF_SUFFIXES = frozenset({".pdf"})
SUPPORTED = TEXT_SUFFIXES | HTML_SUFFIXES | PDF_SUFFIXES
MAX_DOWNLOAD_BYTES = 50 * 1024 * 1024


@dataclass(frozen=True)
class Document:
    """Text read from one source, with where it came from."""

    text: str
    source: str
    kind: str  # "text", "markdown", "html", "pdf", "raw" or "url"


def is_url(source: str) -> bool:
    return source.startswith(("http://", "https://"))


def looks_like_path(source: str) -> bool:
    """One word with a file suffix or a path separator is meant as a path (so a missing file
    is an error, not text to remember); a sentence that mentions "README.md" is text."""
    word = source.strip()
    if not word or any(ch.isspace() for ch in word) or len(word) > 4096:
        return False
    return Path(word).suffix.lower() in SUPPORTED or os.sep in word


def files_in(folder: Path) -> list[Path]:
    """Supported files below ``folder``, recursively, skipping hidden ones, in a stable order."""
    found = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            path = Path(root) / name
            if not name.startswith(".") and path.suffix.lower() in SUPPORTED:
                found.append(path)
    return found


def read_file(path: Path) -> Document:
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED:
        raise KnowledgeSourceError(
            f"{path} is a {suffix or 'suffix-less'} file, which knowledge cannot read. "
            f"Supported: {', '.join(sorted(SUPPORTED))}."
        )
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise KnowledgeSourceError(f"{path} does not exist. Check the path.") from None
    except OSError as exc:
        raise KnowledgeSourceError(f"{path} cannot be read: {str(exc).rstrip('.')}.") from None
    if suffix in PDF_SUFFIXES:
        return Document(pdf_text(data, str(path)), str(path), "pdf")
    text = decode_text(data, str(path))
    if suffix in HTML_SUFFIXES:
        return Document(html_text(text), str(path), "html")
    kind = "markdown" if suffix in (".md", ".markdown") else "text"
    return Document(text, str(path), kind)


def decode_text(data: bytes, source: str) -> str:
    if b"\x00" in data[:8192]:
        raise KnowledgeSourceError(
            f"{source} looks binary (it contains NUL bytes), not text. Pass a text, "
            "Markdown, HTML or PDF file."
        )
    for encoding in (
        ("utf-8-sig", "utf-16") if data[:2] in (b"\xff\xfe", b"\xfe\xff") else ("utf-8-sig",)
    ):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("cp1252", errors="replace")


def pdf_text(data: bytes, source: str) -> str:
    import io

    try:
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError
    except ImportError:
        raise KnowledgeSourceError(
            f"Reading {source} needs pypdf: {install_line('memory')}."
        ) from None
    try:
        reader = PdfReader(io.BytesIO(data))
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PyPdfError, ValueError, KeyError, TypeError) as exc:
        raise KnowledgeSourceError(
            f"{source} is not a readable PDF: {str(exc).rstrip('.')}."
        ) from None
    return "\n\n".join(pages)


class _TextOfHTML(HTMLParser):
    SKIP = frozenset({"script", "style", "noscript", "template", "svg", "head"})
    BLOCKS = frozenset(
        {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article"}
    )

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag in self.SKIP:
            self._skipping += 1
        elif tag in self.BLOCKS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP and self._skipping:
            self._skipping -= 1
        elif tag in self.BLOCKS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def html_text(html: str) -> str:
    """Visible text of an HTML page, with block elements as paragraph breaks."""
    parser = _TextOfHTML()
    parser.feed(html)
    parser.close()
    return "".join(parser.parts)


def fetch_url(url: str, timeout: float) -> Document:
    import requests

    shown = redact_url(url)  # what messages and the stored source show: no password

    try:
        response = requests.get(url, timeout=timeout, stream=True)
    except requests.RequestException as exc:
        raise KnowledgeSourceError(f"Could not fetch {shown}: {redact_text(str(exc))}.") from None
    with response:
        if response.status_code >= 400:
            raise KnowledgeSourceError(
                f"{shown} answered HTTP {response.status_code} {response.reason}; "
                "nothing was added."
            )
        data = b"".join(_limited(response.iter_content(65536), shown))
        content_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
    if content_type == "application/pdf" or url.lower().endswith(".pdf"):
        return Document(pdf_text(data, shown), shown, "url")
    text = decode_text(data, shown)
    if "html" in content_type or text.lstrip()[:15].lower().startswith(("<!doctype", "<html")):
        text = html_text(text)
    return Document(text, shown, "url")


def _limited(chunks: Iterator[bytes], url: str) -> Iterator[bytes]:
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > MAX_DOWNLOAD_BYTES:
            raise KnowledgeSourceError(
                f"{url} is larger than {MAX_DOWNLOAD_BYTES // 2**20} MB; download it and add "
                "the parts you need."
            )
        yield chunk

"""MkDocs hooks that make the built site work opened from files (``site/index.html``), as the
README says to read it, with no web server.

- Search: a browser refuses a page from ``file://`` both a Worker and an XMLHttpRequest, the
  two ways the theme's search loads its index. The index is written again as a script,
  ``search/search_index.js``, which a ``<script>`` tag loads from a file; ``theme/search/main.js``
  (ours, in place of the theme's) searches it with lunr on the page itself.
- ``404.html``: MkDocs gives error pages absolute links (``/css/...``), which a web server
  resolves and a file does not; it sits at the site's root, so relative links work.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: The global the index script defines, and ``theme/search/main.js`` reads.
INDEX_GLOBAL = "praisonsessionSearchIndex"


def on_template_context(context: Any, template_name: str, config: Any) -> Any:
    if template_name == "404.html":
        context["base_url"] = "."  # the page is at the site's root
    return context


def on_post_build(config: Any) -> None:
    folder = Path(config["site_dir"]) / "search"
    if not (folder / "search_index.json").is_file():
        return  # the search plugin is off: nothing to search
    index = json.loads((folder / "search_index.json").read_text(encoding="utf-8"))
    text = json.dumps(index, ensure_ascii=True, separators=(",", ":"))
    script = f"var {INDEX_GLOBAL} = {text};\n"
    (folder / "search_index.js").write_text(script, encoding="utf-8")
    (folder / "worker.js").unlink(missing_ok=True)  # the theme's, which nothing loads now

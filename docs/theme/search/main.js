// The site's search, which works from file:// as well as from a web server. A page opened
// from a file may start no Worker and send no XMLHttpRequest, the two ways the theme's own
// search loads its index; here lunr.js and the index (search_index.js, a script written at
// build time by docs/hooks/offline_site.py) are loaded with <script> tags and searched on the
// page itself. base_url is the page's way to the site's root ("." or ".."), set by the theme.
(function () {
  "use strict";
  var index = null;
  var documents = {};
  var minLength = 3;

  function siteUrl(path) {
    return base_url.replace(/\/$/, "") + "/" + path;
  }

  function escapeHtml(value) {
    return value.replace(/&/g, "&amp;").replace(/"/g, "&quot;")
      .replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  function show(results, query) {
    var box = document.getElementById("mkdocs-search-results");
    if (!box) return;
    box.innerHTML = "";
    if (query.length < minLength) return;
    if (index === null) {
      box.insertAdjacentHTML("beforeend", "<p>Loading the search index...</p>");
      return;
    }
    if (results.length === 0) {
      var none = box.getAttribute("data-no-results-text") || "No results found";
      box.insertAdjacentHTML("beforeend", "<p>" + escapeHtml(none) + "</p>");
      return;
    }
    results.forEach(function (doc) {
      box.insertAdjacentHTML("beforeend",
        '<article><h3><a href="' + escapeHtml(siteUrl(doc.location)) + '">' +
        escapeHtml(doc.title) + "</a></h3><p>" + escapeHtml(doc.text.substring(0, 200)) +
        "</p></article>");
    });
  }

  // Each word as typed (stemmed), or as the start of a word: results come while typing,
  // and no character is lunr query syntax that could make the search fail.
  function search(query) {
    if (index === null || query.length < minLength) return [];
    var hits = index.query(function (q) {
      lunr.tokenizer(query).forEach(function (token) {
        q.term(token.toString(), {boost: 10});
        q.term(token.toString(), {usePipeline: false, wildcard: lunr.Query.wildcard.TRAILING});
      });
    });
    return hits.map(function (hit) { return documents[hit.ref]; });
  }

  function onInput() {
    var query = document.getElementById("mkdocs-search-query").value.trim();
    show(search(query), query);
  }

  function build() {
    var data = window.praisonsessionSearchIndex;
    if (data.config && data.config.separator) {
      lunr.tokenizer.separator = new RegExp(data.config.separator);
    }
    if (data.config && data.config.min_search_length) {
      minLength = data.config.min_search_length;
    }
    index = lunr(function () {
      this.field("title", {boost: 10});
      this.field("text");
      this.ref("location");
      for (var i = 0; i < data.docs.length; i++) {
        this.add(data.docs[i]);
        documents[data.docs[i].location] = data.docs[i];
      }
    });
    var input = document.getElementById("mkdocs-search-query");
    if (input && input.value) onInput();
  }

  function load(path, then) {
    var script = document.createElement("script");
    script.src = siteUrl(path);
    script.onload = then;
    script.onerror = function () { console.error("Could not load " + script.src); };
    document.head.appendChild(script);
  }

  function start() {
    var input = document.getElementById("mkdocs-search-query");
    if (!input) return;
    input.addEventListener("input", onInput);
    var term = new URLSearchParams(window.location.search).get("q");
    if (term) input.value = term;
    load("search/lunr.js", function () { load("search/search_index.js", build); });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();

"""Each docs page's examples run in an environment built from the page's install line alone.

A reader copies a page's ``pip install`` line, then its examples: nothing else is installed.
So every page with examples names one install line (the first ``pip install`` in code on the
page, tests/page_envs.py), and each example runs there (not in the development environment,
which holds every extra): twice in one folder, as a reader who runs it again does, and each time
it prints what its comments say it prints (SHOWS below), the second run included where it
differs. One environment per distinct line, built once and kept under .venv-pages/.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from own_tmpdir import own_tmpdir
from page_envs import InstallLine, environment, environment_variables, install_line
from test_docs import examples, run_block

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs" / "pages").glob("*.md")),
    *sorted((ROOT / "docs" / "pages" / "integrations").glob("*.md")),
]
WITH_EXAMPLES = [page for page in PAGES if examples(page)]
#: A page's install line, in its published form: the same extras as the clone form.
PUBLISHED = re.compile(r'pip install "praisonsession\[([^\]]+)\]"')
#: What ADK logs for a model that reports no token usage: our stand-in models report theirs.
NO_USAGE = "Skipping missing token usage"

#: A text an example prints, as its comments say it: found in both, or a pair (said, printed).
Shown = str | tuple[str, str] | tuple[str, re.Pattern[str]]


def _line(text: str) -> re.Pattern[str]:
    """A whole line of output."""
    return re.compile(rf"^{re.escape(text)}$", re.MULTILINE)


def _said(text: str) -> tuple[str, re.Pattern[str]]:
    """A comment that is the whole printed line."""
    return (text, _line(text))


#: What each example prints, as its comments say: per example, the texts its output holds on a
#: first run and, after "again", on a second run in the same folder (the first run's texts when
#: it is not given). A text is found both in the output and in the example's comments, or, as a
#: pair (said, printed), ``said`` in the comments where they describe what ``printed`` shows.
SHOWS: dict[str, dict[str, list[Shown]]] = {
    "README.md:1": {
        "first": ["{'profile': {'name': 'Ada'}, 'score': 15}", "User prefers concise answers"]
    },
    "agents.md:1": {
        "first": [
            "You said: Hello! I prefer Python.",
            ("2: the question and the answer", "\n2\n"),
            "agent:Assistant.history",
        ]
    },
    "async.md:1": {"first": ["15"]},
    "async.md:2": {"first": ["50"]},
    "encryption.md:1": {"first": ["X1234567", ("False: only ciphertext", "\nFalse\n")]},
    "errors.md:1": {
        "first": [
            (
                "else the packages missing",
                "{'redis': ['redis'], 'postgres': ['psycopg', 'psycopg_pool']}",
            )
        ]
    },
    "hierarchy.md:1": {
        "first": ["Day 1: Alfama. Day 2: Belém.", "Lisbon Porto", "trip", "['trip-b']"]
    },
    "hierarchy.md:2": {"first": ["['first draft']", "On engines 1"]},
    "hierarchy.md:4": {"first": ["1 7"]},
    "hierarchy.md:5": {"first": ["1 ['notes']", "amy's"]},
    "long-conversations.md:1": {
        "first": [("tokens per part of the request", "'recent': "), ("request", "'recalled': ")]
    },
    "long-conversations.md:2": {"first": [("10, as cl100k_base", "10\n")]},
    "long-conversations.md:3": {
        "first": [
            (
                "turns, requests, summaries, prompt/completion/total tokens",
                "{'turns': 1, 'requests': 1, 'summaries': 0, 'prompt_tokens': ",
            )
        ]
    },
    "memory.md:2": {"first": ["Ada lives in Berlin", "None"]},
    "memory.md:3": {
        "first": ["True NONE", "True UPDATE User loves green tea", "['ADD', 'NONE']"],
        "again": ["True NONE", "True NONE None", "['NONE', 'NONE']"],
    },
    "memory.md:4": {
        "first": ["Ada climbed Kilimanjaro 2021-07-04 09:30:00+00:00", "- [2021-07-04 09:30] Ada"]
    },
    "memory.md:6": {
        "first": [
            "KnowledgeAdded(1 source, 1 chunk added",
            "0 chunks added, 1 already known",
        ],
        "again": ["0 chunks added, 1 already known"],
    },
    "remote.md:2": {
        "first": [
            ("what the agent sent", "['Hello! I prefer Python.', 'Do you remember me?']\n"),
            "['Hello! I prefer Python.', 'Do you remember me?']",
            ("-> pro", "\npro\n"),
            ("-> 4 messages, 2 turns", "\n4\n"),
        ],
        "again": [
            ("what the agent sent", "'Do you remember me?', 'Hello! I prefer Python.'"),
            ("both twice when run again", "'Do you remember me?', 'Hello! I prefer Python.'"),
            ("-> pro", "\npro\n"),
            ("(8 again)", "\n8\n"),
        ],
    },
    "sessions.md:1": {
        "first": [
            "{'history': {'last': 'refund'}, 'tickets': 3}",
            ("about 3600.0", re.compile(r"^3(599\.\d+|600\.0)$", re.MULTILINE)),
        ]
    },
    "stores.md:3": {"first": ["power"]},
    "tracing.md:1": {"first": ["increment_state memory memory"]},
    "adk.md:1": {
        "first": [
            "notes Noted: Buy green tea",
            ("4 events per turn", "\n4 events\n"),
            "{'notes_here': 1, 'app:notes': 1, 'user:last_note': 'Buy green tea'}",
        ],
        "again": [
            "notes Noted: Buy green tea",
            ("8 events", "\n8 events\n"),
            ("{'notes_here': 2, 'app:notes': 2, ...}", "{'notes_here': 2, 'app:notes': 2, 'user:"),
        ],
    },
    "adk.md:2": {
        "first": [
            ("x: in this invocation's session", _line("x")),
            (
                "app: and user: keys, no cart",
                "{'app:visits': 1, 'user:plan': 'pro', 'user:tz': 'UTC'}",
            ),
            "{'app:visits': 1}",
            "{'plan': 'pro', 'tz': 'UTC'}",
        ]
    },
    "adk.md:3": {
        "first": [
            "{'adk.events': 1}",
            (
                "the event's JSON, as ADK made it",
                "{'parts': [{'text': 'Two pots of green tea, please.'}], 'role': 'user'}",
            ),
            ("2: the session, and bob's user: state", _line("2")),
        ]
    },
    "adk.md:4": {"first": ["My cat is called Miso.", ("1", _line("1"))]},
    "agentscope2.md:1": {
        "first": [
            ("True: the AgentState comes back equal", _line("True")),
            "['What is 2+2?', '4.'] True",
            "['Hi!', 'Hello, Ada.'] False",
        ]
    },
    "agentscope2.md:2": {
        "first": [
            ("2: the session and its messages", _line("2")),
            ("False: sealed at rest", _line("False")),
            ("2: everything bob had, gone", _line("2")),
        ]
    },
    "langgraph.md:1": {
        "first": [
            "('ask',)",
            "['plan', 'ask', 'act: yes']",
            "[(), ('act',)]",
            "['plan']",
            "['plan', 'ask', 'act: no']",
            "8 checkpoints",
        ]
    },
    "langgraph.md:2": {"first": ["{'topic': 'refund'}", "['support-1']", _said("None")]},
    "langgraph.md:3": {"first": ["{'likes': 'ramen'}", "[('alice', 'preferences')]", _said("[]")]},
    "langgraph.md:4": {"first": [("False: only ciphertext", _line("False"))]},
    "openai-agents.md:1": {
        "first": [
            "It is sunny in Paris.",
            "You asked about the weather in Paris.",
            ("6 items", "\n6 items\n"),
        ],
        "again": [
            "It is sunny in Paris.",
            "You asked about the weather in Paris.",
            ("12 when run again", "\n12 items\n"),
        ],
    },
    "openai-agents.md:2": {"first": ["{'openai.items': 4}", "['dinner']", _said("[]")]},
    "openai-agents.md:3": {
        "first": [
            ("5: stored as given", _line("5")),
            ("2: the raw tail", _line("2")),
            ("4: the orphan was not stored", _line("4")),
            (
                "[{'role': 'assistant', ...}]: the",
                _line("[{'role': 'assistant', 'content': 'It is sunny.'}]"),
            ),
        ]
    },
    "openai-agents.md:4": {
        "first": ["my card is 4111 1111 1111 1111", ("False: only ciphertext", _line("False"))]
    },
    "praisonai.md:1": {
        "first": ["2 + 3 = 5.", "You asked me to add 2 and 3.", ("6 (12", "\n6 messages\n")],
        "again": [
            "2 + 3 = 5.",
            "You asked me to add 2 and 3.",
            ("(12 run again)", "\n12 messages\n"),
        ],
    },
    "praisonai.md:2": {"first": [("0: bad input is refused", _line("0"))]},
    "praisonai.md:3": {"first": ["{'praisonai.messages': 2}", _said("[]")]},
    "praisonai.md:4": {"first": ["my card is 4111", _said("False")]},
}


def _id(page: Path) -> str:
    return page.name


EXAMPLES = [
    pytest.param(page, n, id=f"{page.name}:{n}")
    for page in WITH_EXAMPLES
    for n in range(1, len(examples(page)) + 1)
]


def _line(page: Path) -> InstallLine:
    line = install_line(page.read_text("utf-8"))
    assert line is not None, f"{page.name} has examples and no install line"
    return line


def _comments(code: str) -> str:
    """The text of the example's comments (after ``#``, outside strings), one per line."""
    said = []
    for line in code.splitlines():
        quote = None
        for i, char in enumerate(line):
            if quote:
                quote = None if char == quote and line[i - 1] != "\\" else quote
            elif char in "'\"":
                quote = char
            elif char == "#":
                said.append(line[i + 1 :].strip())
                break
    return "\n".join(said)


def _printed_comments(code: str) -> list[str]:
    """The comments beside a ``print(`` call: each says what the call prints."""
    return [_comments(line) for line in code.splitlines() if "print(" in line and _comments(line)]


@pytest.mark.parametrize("page", WITH_EXAMPLES, ids=_id)
def test_a_page_with_examples_names_one_install_line(page: Path) -> None:
    line = _line(page)
    for published in PUBLISHED.findall(page.read_text("utf-8")):
        assert tuple(published.split(",")) == line.extras, f"{page.name}: {published} != {line}"
    if page.parent.name == "integrations":  # a framework's page installs its framework's extra
        assert page.stem in line.extras, f"{page.name}: {line}"


def test_the_install_line_is_read_from_code_only() -> None:
    assert install_line('Run `pip install ".[adk,memory]"`, then') == InstallLine(("adk", "memory"))
    assert install_line("$ pip install .    # the core") == InstallLine(())
    assert install_line('see `pip install ".[postgres]" pytest` below') == InstallLine(
        ("postgres",), ("pytest",)
    )
    assert install_line("to turn it on: pip install . in a clone") is None  # prose, not code
    assert str(InstallLine(("adk", "memory"))) == 'pip install ".[adk,memory]"'


def test_every_commented_print_is_checked() -> None:
    """Each ``print(...)  # ...`` line's comment holds a text SHOWS checks, so a new example or
    a changed comment cannot go unchecked."""
    unchecked = []
    for page in WITH_EXAMPLES:
        for n, code in enumerate(examples(page), 1):
            shows = SHOWS.get(f"{page.name}:{n}", {})
            said = [
                text if isinstance(text, str) else text[0]
                for texts in shows.values()
                for text in texts
            ]
            for comment in _printed_comments(code):
                if not any(text in comment for text in said):
                    unchecked.append(f"{page.name}:{n}: # {comment}")
    assert unchecked == []


@pytest.mark.slow
@pytest.mark.timeout(900)  # the first example of a line builds its environment
@pytest.mark.parametrize(("page", "n"), EXAMPLES)
def test_an_example_runs_twice_from_its_page_install_line_alone(
    page: Path, n: int, tmp_path: Path
) -> None:
    line = _line(page)
    try:
        python = environment(line)
    except RuntimeError as error:
        pytest.fail(str(error))
    code = examples(page)[n - 1]
    shows = SHOWS.get(f"{page.name}:{n}", {})
    comments = _comments(code)
    # a temporary directory of its own: what an example leaves there stays in tmp_path
    variables = {**environment_variables(), "TMPDIR": str(own_tmpdir(tmp_path))}
    for attempt in ("first", "again"):
        done = run_block(code, tmp_path, python, env=variables, timeout=300)
        assert done.returncode == 0, f"{attempt} run, after {line}:\n{done.stderr[-3000:]}"
        assert NO_USAGE not in done.stderr
        for text in shows.get(attempt, shows.get("first", [])):
            said, printed = (text, text) if isinstance(text, str) else text
            assert said in comments, f"{page.name}:{n}: no comment says {said!r}"
            found = (
                printed.search(done.stdout)
                if isinstance(printed, re.Pattern)
                else (printed in done.stdout)
            )
            assert found, f"{attempt} run, not {printed!r} in what it printed:\n{done.stdout}"

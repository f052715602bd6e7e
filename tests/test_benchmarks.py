"""The benchmarks still run: each in a quick configuration, checked on what it prints.

No figure is asserted here (timings belong to ``make bench``); a benchmark checks its own
counts as it runs (a lost increment or message stops it), so a zero exit says the workloads
did what they claim on the code as it is now.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def run_benchmark(script: str, *args: str, cwd: Path) -> str:
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


@pytest.mark.slow
def test_bench_long_conversations_resumes_an_agent_without_embedding_its_turns_again(
    tmp_path: Path,
) -> None:
    out = run_benchmark("bench_long_conversations.py", "--resume", "60", cwd=tmp_path)
    rows = [line.strip("|").split("|") for line in out.splitlines() if line.startswith("| 60 |")]
    embedded = {row[1].strip(): int(row[5].strip().replace(",", "")) for row in rows}
    assert embedded["before (no saved vectors)"] >= 40  # every turn before the window
    assert embedded["after, median of 3"] <= 2  # a turn the last process had not saved, at most
    assert "60 turns: vectors saved by the first process for 60 turns" in out


@pytest.mark.slow
def test_bench_limits_prints_every_measure_beside_its_raw_engine(tmp_path: Path) -> None:
    out = run_benchmark("bench_limits.py", "--quick", "--no-peers", cwd=tmp_path)
    for measure in (
        "| increment_state, SQLite (ops/s) | process (synchronous=NORMAL) |",
        "| increment_state, SQLite (ops/s) | power (synchronous=FULL) |",
        "| increment_state, Redis, 1 process (ops/s) |",
        "| Session() cold start, bytecode cached (ms) |",
        "| add_memories,",
        "| knowledge ingestion,",
    ):
        assert measure in out


@pytest.mark.slow
def test_bench_hierarchy_prints_every_operation_on_every_store(tmp_path: Path) -> None:
    out = run_benchmark("bench_hierarchy.py", "--quick", cwd=tmp_path)
    assert out.startswith("Durability: process")
    for store in ("memory", "json", "sqlite", "redis"):
        for op in ("fork", "snapshot", "restore", "export", "import"):
            assert f"| {store} | {op} |" in out
    assert "| sqlite | 10,000 |" in out and "| redis | 10,000 |" in out


def test_bench_tracing_prints_off_and_on_beside_no_hook(tmp_path: Path) -> None:
    out = run_benchmark("bench_tracing.py", "--quick", cwd=tmp_path)
    for row in ("| get_state, memory:// (ops/s) |", "| increment_state, SQLite (ops/s) |"):
        assert row in out
    assert "| raw SQLite UPDATE + COMMIT (ops/s) |" in out


@pytest.mark.slow
def test_bench_server_prints_every_ratio_beside_the_bare_stack(tmp_path: Path) -> None:
    out = run_benchmark("bench_server.py", "--quick", cwd=tmp_path)
    for measure in (
        "| increment, ours |",
        "| increment, bare Starlette |",
        "| JSON route, bare Starlette |",
        "| chat, memory=False, ours |",
        "| chat, memory on and empty, ours |",
        "| chat, memory on and empty, 10-turn sessions, ours |",
        "| chat, bare Starlette |",
        "- bare: a Starlette route reads the session's last",
        "| spread over rounds |",
        "of increment, bare Starlette | >= 0.8 ",
        "of chat, bare Starlette | >= 0.6 ",
        "server: largest / smallest history",
        "Agent.chat: largest / smallest history",
        "- get_context (embed once, 3 searches):",
        "| Session(agent_url=...) |",
        "| requests.Session |",
    ):
        assert measure in out


@pytest.mark.slow
def test_bench_memory_quality_prints_every_target_beside_the_raw_engine(tmp_path: Path) -> None:
    out = run_benchmark("bench_memory_quality.py", "--quick", cwd=tmp_path)
    for line in (
        "recall@5 (answerable)",
        "updated above stale",
        "no answer: best < 0.25",
        "add_memory agreed with the decision on 8/8 pairs",
        "restated in the same words (case, punctuation, 'the'): ",
        "threshold sweep",
        "p95 ms",
    ):
        assert line in out
    targets = out.split("Targets:")[1].strip().splitlines()
    assert len(targets) == 6 and all(t.split()[0] in ("PASS", "MISS") for t in targets)
    assert any("within 0.02 of similarity" in t for t in targets)  # recency costs no recall
    assert any(t.strip().startswith("PASS  same-words restatements") for t in targets)


@pytest.mark.slow
def test_bench_memory_search_prints_cold_and_warm_beside_bare_chroma_at_each_size(
    tmp_path: Path,
) -> None:
    out = run_benchmark("bench_memory_search.py", "--quick", cwd=tmp_path)
    for line in (
        "300 memories",
        "1,000 memories",
        "embedder alone (embed_query)",
        "bare Chroma: embed + query",
        "search_memory, cold (new question)",
        "search_memory, warm (same again)",
        "Growth from 300 to 1,000",
    ):
        assert line in out
    targets = out.split("Targets:")[1].strip().splitlines()
    assert len(targets) == 1 and targets[0].split()[0] in ("PASS", "MISS")


@pytest.mark.slow
def test_bench_knowledge_ingest_times_each_stage_beside_the_embedder(tmp_path: Path) -> None:
    out = run_benchmark("bench_knowledge_ingest.py", "--quick", cwd=tmp_path)
    assert "Knowledge ingestion: 40 Markdown files" in out
    assert "embedder alone, same chunks (raw)" in out
    assert "whole/its embedding" in out and "ratio (median of rounds)" in out
    for stage in ("read files", "chunk", "look up known chunks", "embed", "write to Chroma"):
        assert stage in out


@pytest.mark.slow
def test_bench_postgres_prints_ours_beside_bare_psycopg_and_listing_on_every_store(
    tmp_path: Path,
) -> None:
    out = run_benchmark("bench_postgres.py", "--quick", cwd=tmp_path)
    assert out.startswith("PostgreSQL ")
    assert "| inline (Session's way) |" in out and "| on the loop, asyncio pool |" in out
    assert "| 10 |" in out and "| 300 |" in out  # a saved turn at both history sizes
    assert "4 processes x 50 appended turns on one session: 200 of 200 stored, none lost" in out
    for store in ("memory", "json", "sqlite", "redis", "postgres"):
        assert f"| {store} | 300 |" in out and f"| {store} | 1,000 |" in out
        assert f"- {store}: first page x" in out


def test_bench_ttl_reads_prints_each_store_beside_the_raw_engine_flushed_and_not(
    tmp_path: Path,
) -> None:
    out = run_benchmark("bench_ttl_reads.py", "--quick", cwd=tmp_path)
    for store in ('SQLite, durability "process"', 'SQLite, durability "power"', "PostgreSQL"):
        assert f"\n{store}" in out
    assert out.count("| ours, TTL slides |") == 3 and out.count("| ours, no TTL |") == 3
    assert out.count("| raw engine, slide at NORMAL |") == 2
    assert out.count("| raw engine, slide at FULL |") == 2
    assert "| raw engine, synchronous_commit=off |" in out
    assert "| raw engine, synchronous_commit=on |" in out


@pytest.mark.slow
def test_bench_erasure_scrubs_postgres_and_prints_its_cost_beside_the_bare_statements(
    tmp_path: Path,
) -> None:
    out = run_benchmark("bench_erasure.py", "--quick", cwd=tmp_path)
    assert out.startswith("PostgreSQL ") and "wal_recycle=off" in out
    assert "| 2,000 | " in out and "x | " in out  # erase_user beside the bare scrub
    assert "No byte of the erased user left in the server's directory" in out


@pytest.mark.slow
def test_bench_agentscope_agents_puts_every_session_beside_agentscopes(tmp_path: Path) -> None:
    out = run_benchmark("bench_agentscope_agents.py", "--quick", cwd=tmp_path)
    for size in ("10", "100"):
        assert f"| {size} | AgentScope JSONSession |" in out
        assert f"| {size} | AgentScope RedisSession |" in out
        assert out.count(f"| {size} | ours, layout=agentscope |") == 2  # JSON and Redis
        assert f"| {size} | ours, native Redis |" in out


@pytest.mark.slow
def test_bench_long_conversations_keeps_facts_within_budget_in_quick_mode(tmp_path: Path) -> None:
    out = run_benchmark("bench_long_conversations.py", "--quick", cwd=tmp_path)
    (row,) = [line for line in out.splitlines() if line.startswith("| 60 |")]
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1] == "30 (7)" and cells[2] == "12"  # facts (corrected), questions
    assert float(cells[3].rstrip("%")) >= 90  # fact present in the request when asked
    assert cells[6].startswith("0 of 60")  # no request over budget


@pytest.mark.slow
def test_bench_encryption_prints_each_store_encrypted_and_not_beside_raw_sqlite(
    tmp_path: Path,
) -> None:
    out = run_benchmark("bench_encryption.py", "--quick", cwd=tmp_path)
    for store in ("SQLite", "JSON"):
        assert f"| {store} | " in out
    assert "raw SQLite insert" in out and "compare-and-set" in out


def _sample_chat() -> dict:
    """A small chat in REALTALK's format (written here; not the benchmark's data)."""
    said = [
        ("Ana", "I adopted a grey cat called Miso today!"),
        ("Ben", "That is lovely, how old is Miso?"),
        ("Ana", "She is two years old and loves boxes."),
        ("Ben", "I started learning the cello this week."),
        ("Ana", "Wow, love that! How are the lessons?"),
        ("Ben", "Hard, my teacher says I hold the bow too tight."),
    ]
    turns = [
        {
            "clean_text": text,
            "speaker": speaker,
            "date_time": f"0{1 + n // 3}.02.2024, 10:0{n}:00",
            "dia_id": f"D{1 + n // 3}:{1 + n % 3}",
        }
        for n, (speaker, text) in enumerate(said)
    ]
    return {
        "name": {"speaker_1": "Ana", "speaker_2": "Ben"},
        "session_1": turns[:3],
        "session_1_date_time": turns[0]["date_time"],
        "session_2": turns[3:],
        "session_2_date_time": turns[3]["date_time"],
        "qa": [
            {"question": "What is the name of Ana's cat?", "evidence": ["D1:1"], "category": 1},
            {"question": "When did Ben start the cello?", "evidence": ["D2:1"], "category": 2},
            {"question": "What does Ben's teacher say?", "evidence": ["D2:3; D2:1"], "category": 3},
        ],
    }


@pytest.mark.slow
def test_bench_memory_conversations_prints_every_system_beside_the_baselines(
    tmp_path: Path,
) -> None:
    import json

    data = tmp_path / "chats"
    data.mkdir()
    (data / "Chat_1_Ana_Ben.json").write_text(json.dumps(_sample_chat()))
    out = run_benchmark("bench_memory_conversations.py", "--data", str(data), cwd=tmp_path)
    assert "Turns stored (defaults): 6 of 6 (100.0%)" in out
    assert "Evidence turns stored (defaults): 3 of 3 (100.0%)" in out
    for depth in (5, 10):
        table = out.split(f"recall@{depth} by question category")[1]
        for system in (
            "ours, defaults",
            "ours, dedupe=False",
            "ours, prefer_recent=False",
            "raw model, brute force",
            "BM25",
            "fusion (RRF) of the two",
        ):
            row = next(line for line in table.splitlines() if line.startswith(f"| {system} |"))
            cells = [cell.strip() for cell in row.strip("|").split("|")[1:]]
            assert len(cells) == 4 and cells[-1] == "1.000"  # 6 turns: all within 5

"""The parts of a distributed run without a cluster: input cut into shards (byte ranges whose
line numbers come from counting newlines, gzip whole, Parquet row groups, file:// URIs), a
shard written as Parquet and read back through every read the store offers, and the summary
merged from the shards' footers equal to the one streamed from the samples."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("duckdb")

from agentgauge.config import load_suite
from agentgauge.engine import EvaluateOptions, evaluate, iter_sources, score_batch
from agentgauge.io.jsonl import RawLine, iter_raw_lines
from agentgauge.results import ParquetSamples, ResultsFolder, compute_stats, summary_stats
from agentgauge.results.dataset import ShardWriter
from agentgauge.results.shards import Shard, inspect_file, list_inputs, plan_shards, shard_items
from agentgauge.store import SampleQuery, Store

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo_traces.jsonl"


def _inspect_here(shard_bytes: int):  # type: ignore[no-untyped-def]
    return lambda needs: [inspect_file(f, kind, shard_bytes) for f, kind in needs]


def _jsonl(path: Path) -> Path:
    lines = DEMO.read_text(encoding="utf-8").splitlines()
    lines.insert(3, "{broken")
    lines.insert(9, "")
    lines.insert(10, "   ")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_byte_ranges_hold_every_line_once_with_its_number(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "t.jsonl")
    whole = [(x.line, getattr(x, "text", None)) for x in iter_raw_lines(path)]
    files = list_inputs([str(tmp_path / "*.jsonl")])
    for shard_bytes in (700, 4096, 20_000, 10**9):
        shards = plan_shards(files, "native", shard_bytes, _inspect_here(shard_bytes))
        expected = -(-path.stat().st_size // shard_bytes)
        assert len(shards) == expected and [s.ordinal for s in shards] == list(range(expected))
        read = []
        for shard in shards:
            assert Shard.from_json(shard.to_json()) == shard
            for seq, key, item in shard_items(shard):
                assert seq >> 32 == shard.ordinal and key == f"{path}#{item.line}"
                read.append((item.line, getattr(item, "text", None)))
        assert read == whole  # each line once, in order, numbered as the whole file numbers it


def test_gzip_is_one_shard_and_parquet_its_row_groups(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    lines = DEMO.read_text(encoding="utf-8").splitlines()[:23]
    with gzip.open(tmp_path / "a.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    pq.write_table(pa.table({"trace": lines}), tmp_path / "b.parquet", row_group_size=10)
    files = list_inputs([f"file://{tmp_path}/a.jsonl.gz", str(tmp_path / "b.parquet")])
    assert files[0].source == f"file://{tmp_path}/a.jsonl.gz"
    shards = plan_shards(files, "native", 100, _inspect_here(100))
    assert [(s.kind, s.row_groups, s.first_line) for s in shards] == [
        ("lines", (), 1),
        ("parquet", (0,), 1),
        ("parquet", (1,), 11),
        ("parquet", (2,), 21),
    ]
    items = [item for shard in shards for _, _, item in shard_items(shard)]
    assert [type(i) for i in items] == [RawLine] * 46
    assert [i.line for i in items] == [*range(1, 24), *range(1, 24)]
    assert [json.loads(i.text) for i in items[:23]] == [json.loads(i.text) for i in items[23:]]
    with pytest.raises(Exception, match="no such file"):
        list_inputs([str(tmp_path / "*.nothing")])


def test_a_shard_in_parquet_reads_back_as_the_store_has_it(tmp_path: Path) -> None:
    """The same traces scored once into the store and once into a Parquet shard: every read
    the reports and the viewer make gives the same answer from both."""
    suite = load_suite("behavior")
    path = _jsonl(tmp_path / "t.jsonl")
    with Store(tmp_path / "s.db") as store:
        local_id = evaluate(
            iter_sources([path]),
            suite,
            store=store,
            options=EvaluateOptions(jobs=1, progress=False),
        )
        metrics = suite.build_metrics()
        folder = ResultsFolder(str(tmp_path / "results"))
        ray_id = store.create_run(
            kind="evaluate",
            suite=suite.name,
            config={"suite": suite.model_dump(mode="json")},
            place=folder.uri,
        )
        files = list_inputs([str(path)])
        for shard in plan_shards(files, "native", 40_000, _inspect_here(40_000)):
            writer = ShardWriter(folder, ray_id, shard.name, [m.name for m in metrics])
            batch = list(shard_items(shard))
            for start in range(0, len(batch), 16):
                writer.write(score_batch(batch[start : start + 16], suite, metrics, compress=False))
            writer.commit()
        store.finish_run(ray_id)
        run = store.get_run(ray_id)
        parquet = ParquetSamples(folder, run)
        assert len(folder.files("samples", ray_id)) == 4
        assert parquet.count() == 72 and parquet.count("read_errors") == 1

        def strip(rows):  # type: ignore[no-untyped-def]
            return [r._replace(seq=0) for r in rows]  # a position: numbered per shard

        assert parquet.metric_names(ray_id) == store.metric_names(local_id)
        assert strip(parquet.iter_samples(ray_id, with_trace=True)) == strip(
            store.iter_samples(local_id, with_trace=True)
        )
        assert strip(parquet.iter_samples(ray_id, order="worst", limit=7)) == strip(
            store.iter_samples(local_id, order="worst", limit=7)
        )
        key = f"{path}#40"
        assert strip([parquet.get_sample(ray_id, key)]) == strip([store.get_sample(local_id, key)])
        for query in (
            SampleQuery(),
            SampleQuery(sort="composite", descending=True),
            SampleQuery(sort="tool_usage", band="fair"),
            SampleQuery(search="DEMO-01", ranges=(("accuracy", 0.5, None),)),
            SampleQuery(ranges=(("composite", 0.2, 0.8),), category="tool_use"),
        ):
            got, want = (
                parquet.query_samples(ray_id, query, offset=3, limit=9),
                (store.query_samples(local_id, query, offset=3, limit=9)),
            )
            assert got[0] == want[0] and strip(got[1]) == strip(want[1]), query
        for column in ("recommendation", "band", "error_type", "category", "task_id"):
            got_facets = parquet.facet_counts(ray_id, column)
            want_facets = store.facet_counts(local_id, column)
            assert [
                f._replace(mean_composite=round(f.mean_composite or 0, 12)) for f in got_facets
            ] == [f._replace(mean_composite=round(f.mean_composite or 0, 12)) for f in want_facets]
        assert parquet.missing_reasons(ray_id) == store.missing_reasons(local_id)
        assert parquet.read_errors(ray_id) == store.read_errors(local_id)
        second = parquet.get_sample(ray_id, f"{path}#2")
        assert parquet.neighbours(ray_id, second.seq) == (f"{path}#1", f"{path}#3")
        # the summary: the shards' footers merged, a scan of the samples, and the store's
        merged = compute_stats(parquet, ray_id, parquet.merged_stats())
        assert merged == compute_stats(parquet, ray_id) == summary_stats(store, local_id)
        assert summary_stats(store, ray_id) == merged

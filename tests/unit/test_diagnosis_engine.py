"""The diagnosis engine on hand-made figures: each verdict, the projection, shares and top keys."""
from __future__ import annotations

from dynalocal.diagnosis.engine import FINE, HOT_GSI_KEY, HOT_KEY, UNDER_PROVISIONED, as_json, diagnose
from dynalocal.diagnosis.figures import (
    GSI_BACK_PRESSURE,
    PARTITION_CEILING,
    PARTITION_SHARE,
    TABLE_RATE,
    KeyFigures,
    MeterFigures,
    PartitionFigures,
)
from dynalocal.diagnosis.render import render_report, summary_line

WINDOW = 10.0


def part(n: int, rate: float, keys: dict[str, float], throttles: dict | None = None, ceiling: float = 1000.0,
         share: float | None = None, refused_per_second: int = 0) -> PartitionFigures:
    units = sum(keys.values())
    return PartitionFigures(n, units, rate * WINDOW, rate, ceiling, share, throttles or {}, 0.0,
                            [KeyFigures(k, u, int(u)) for k, u in keys.items()],
                            [(rate, refused_per_second)] * int(WINDOW))


def meter(parts, limit=None, index=None, model="adaptive", billing="PROVISIONED", balance=None, direction="write"):
    return MeterFigures("orders", index, direction, billing, model, limit, TABLE_RATE, balance, WINDOW, 60.0, parts)


def test_hot_key_over_the_partition_ceiling():
    parts = [part(0, 1400, {"2024-11-23": 9000, "2024-11-22": 100}, {PARTITION_CEILING: 120}),
             part(1, 10, {"2024-11-21": 100}), part(2, 0, {}), part(3, 0, {})]
    [report] = diagnose([meter(parts, limit=4000)])
    v = report.verdict
    assert (v.kind, v.key, v.partition) == (HOT_KEY, "2024-11-23", 0)
    assert round(v.share, 3) == round(9000 / 9100, 3)  # of its partition's units since start
    # 1410 WCU/s over the window, the hot partition sustains 1000: 400/1410 of writes throttled in steady state.
    assert v.projection is not None and v.projection.scope == "partition 0"
    assert round(v.projection.throttled_share, 3) == round(400 / 1410, 3)
    assert "key '2024-11-23' carried 98.9% of partition 0's writes (9,000 of 9,100 WCU since start)" in v.summary
    assert "ran at 1,400 WCU/s (peak 1,400 in one second) and sustains 1,000 WCU/s" in v.summary
    assert "28.4% of writes would be throttled" in v.summary
    assert any("write sharding" in a for a in v.advice)
    assert report.throttles == {PARTITION_CEILING: 120}


def test_hot_gsi_key_names_the_index_and_key():
    table = meter([part(i, 50, {f"order-{i}": 500}) for i in range(4)], limit=1000)
    gsi = meter([part(0, 1200, {"PENDING": 12000}, {PARTITION_CEILING: 30}), part(1, 5, {"SHIPPED": 50})],
                index="by-status", limit=2000)
    table.partitions[0].throttles = {GSI_BACK_PRESSURE: 30}
    [report] = diagnose([table, gsi])
    v = report.verdict
    assert (v.kind, v.index, v.key) == (HOT_GSI_KEY, "by-status", "PENDING")
    assert "index by-status of table orders" in v.summary
    assert any("GSI partition key" in a for a in v.advice)
    assert report.throttles == {GSI_BACK_PRESSURE: 30, "partition ceiling (index by-status)": 30}
    table_meter = report.meters[0]
    assert table_meter.verdict.kind == FINE and "a GSI could not absorb them" in table_meter.verdict.summary


def test_table_under_provisioned_with_even_partitions_and_projection():
    # 4 partitions at 75 WCU/s each = 300 WCU/s against 240 provisioned; 1,200 units of burst left.
    parts = [part(i, 75, {f"CUSTOMER#{i}{j}": 75 for j in range(10)}) for i in range(4)]
    [report] = diagnose([meter(parts, limit=240, balance=1200.0)])
    v = report.verdict
    assert v.kind == UNDER_PROVISIONED
    assert v.projection.scope == "table" and v.projection.burst_left_seconds == 20.0
    assert round(v.projection.throttled_share, 2) == 0.2  # 60 of 300 WCU/s
    assert "ran at 300 WCU/s of writes against 240 WCU/s provisioned" in v.summary
    assert "burst capacity lasts about 20 s more at this rate, then 20% of writes would be throttled" in v.summary
    assert "the key design is not the cause" in v.summary
    assert any("Raise WriteCapacityUnits to at least 300" in a for a in v.advice)


def test_under_provisioned_counts_refused_requests_in_the_demand():
    # Admitted at the limit (240/s) while 60 requests/s of 1 WCU each were throttled: demand ~300.
    parts = [part(i, 60, {f"k{i}": 600}, {TABLE_RATE: 150}, refused_per_second=15) for i in range(4)]
    [report] = diagnose([meter(parts, limit=240, balance=0.0)])
    v = report.verdict
    assert v.kind == UNDER_PROVISIONED and round(v.needed) == 300
    assert "600 writes throttled" in v.summary


def test_classic_share_throttles_on_a_skewed_partition_are_a_hot_key():
    parts = [part(0, 100, {"2024-02-10": 3000}, {PARTITION_SHARE: 300}, share=60.0)] + \
            [part(i, 0, {}, share=60.0) for i in range(1, 4)]
    [report] = diagnose([meter(parts, limit=240, model="classic")])
    v = report.verdict
    assert (v.kind, v.key, v.partition) == (HOT_KEY, "2024-02-10", 0)
    assert "sustains 60 WCU/s" in v.summary  # the classic 1/N share, not the 1,000 WCU ceiling
    assert round(v.projection.throttled_share, 2) == 0.4  # (100 - 60) / 100


def test_classic_share_throttles_on_even_partitions_are_under_provisioning():
    parts = [part(i, 70, {f"c{i}": 700}, {PARTITION_SHARE: 10}, share=60.0) for i in range(4)]
    [report] = diagnose([meter(parts, limit=240, model="classic")])
    assert report.verdict.kind == UNDER_PROVISIONED


def test_fine_names_the_dominant_key_and_the_design_ceiling():
    # One key near its partition's ceiling (900 of 1,000 WCU/s), never throttled: fine, with a note.
    parts = [part(0, 900, {"2024-02-10": 9000})] + [part(i, 0, {}) for i in range(1, 4)]
    [report] = diagnose([meter(parts, limit=4000)])
    v = report.verdict
    assert v.kind == FINE and v.key == "2024-02-10" and v.projection is None
    assert "key '2024-02-10' carried 100% of partition 0, which peaked at 900 of the 1,000 WCU/s" in v.summary


def test_fine_says_nothing_of_a_key_far_from_its_ceiling():
    parts = [part(0, 200, {"2024-02-10": 600})] + [part(i, 0, {}) for i in range(1, 4)]
    [report] = diagnose([meter(parts, limit=240)])
    v = report.verdict
    assert v.kind == FINE and v.key is None and "2024-02-10" not in v.summary


def test_fine_with_no_traffic_and_reads_and_writes_reported_separately():
    reads = meter([part(0, 0, {})], limit=10, direction="read")
    writes = meter([part(0, 5, {"a": 50})], limit=10)
    [report] = diagnose([reads, writes])
    assert [m.direction for m in report.meters] == ["read", "write"]
    assert report.verdict.kind == FINE and report.verdict.direction == "write"
    assert reads.unit == "RCU" and writes.unit == "WCU"


def test_render_and_json_carry_the_verdicts():
    parts = [part(0, 1400, {"2024-11-23": 9000}, {PARTITION_CEILING: 120}), part(1, 10, {"x": 100})]
    reports = diagnose([meter(parts, limit=4000)])
    text = render_report(reports, WINDOW)
    assert "== orders" in text and "!!  hot key on table orders" in text
    assert "throttled 120 (partition ceiling: 120)" in text and "'2024-11-23' 9,000 (100%)" in text
    assert summary_line(reports[0]).startswith("orders: hot key on table orders")
    data = as_json(reports)[0]
    assert data["verdict"]["kind"] == HOT_KEY and data["meters"][0]["partitions"][0]["top_keys"][0]["key"] == "2024-11-23"

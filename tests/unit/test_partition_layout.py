"""The key-ordered leaf layout of Partition against a plain model (a dict + sorted keys)."""
from __future__ import annotations

from bisect import bisect_left, bisect_right

from hypothesis import given, settings
from hypothesis import strategies as st

from dynalocal.storage import partition as partition_module
from dynalocal.storage.partition import Partition

KEYS = st.binary(min_size=0, max_size=3)
BOUND = st.one_of(st.none(), KEYS)


def model_range(model: dict, lo, hi, inclusive, reverse, limit=None) -> list[bytes]:
    keys = sorted(model)
    i = 0 if lo is None else bisect_left(keys, lo) if inclusive[0] else bisect_right(keys, lo)
    j = len(keys) if hi is None else bisect_right(keys, hi) if inclusive[1] else bisect_left(keys, hi)
    out = keys[i:j]
    if reverse:
        out.reverse()
    return out if limit is None else out[:limit]


OPS = st.lists(st.one_of(
    st.tuples(st.just("put"), KEYS, st.integers(0, 50)),
    st.tuples(st.just("delete"), KEYS),
    st.tuples(st.just("load"), st.lists(st.tuples(KEYS, st.integers(0, 50)), max_size=30)),
    st.tuples(st.just("chunks"), BOUND, BOUND, st.tuples(st.booleans(), st.booleans()), st.booleans(),
              st.one_of(st.none(), st.integers(0, 40)), st.integers(1, 9)),
), max_size=120)


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_partition_matches_a_sorted_dict_model(ops):
    saved = partition_module.LOAD
    partition_module.LOAD = 4  # tiny leaves, so splits, merges and leaf-crossing reads all happen
    try:
        part, model = Partition(0, 1), {}
        for op in ops:
            if op[0] == "put":
                record = (b"v%d" % op[2], op[2])
                assert part.put(op[1], record) == model.get(op[1])
                model[op[1]] = record
            elif op[0] == "delete":
                assert part.delete(op[1]) == model.pop(op[1], None)
            elif op[0] == "load":
                batch = dict((k, (b"l%d" % s, s)) for k, s in op[1])
                part.load(list(batch), list(batch.values()))
                model.update(batch)
            else:
                _, lo, hi, inclusive, reverse, limit, size = op
                want = model_range(model, lo, hi, inclusive, reverse, limit)
                chunks = list(part.chunks(lo, hi, inclusive, reverse, limit, size))
                assert all(len(k) == len(r) for k, r in chunks)
                assert all(len(k) == size for k, _ in chunks[:-1]) and all(k for k, _ in chunks)
                assert [k for keys, _ in chunks for k in keys] == want
                assert [r for _, recs in chunks for r in recs] == [model[k] for k in want]
                assert list(part.range(lo, hi, inclusive=inclusive, reverse=reverse)) == \
                    model_range(model, lo, hi, inclusive, reverse)
            for key in list(model)[:5]:
                assert part.get(key) == model[key]
            assert len(part) == len(model)
            assert part.size_bytes == sum(s for _, s in model.values())
        assert list(part.items()) == sorted(model.items())
        assert part.get(b"absent-key") is None
    finally:
        partition_module.LOAD = saved

"""Golden sets with subtile metadata: the META field, the header's codebook tables, flags of
codebook elements, verify's comparison of META words, and a header that lies about META.

Expected layouts, bit ranges, table words and flags are worked out by hand from the rules
(docs/golden-vectors.md, SEMANTICS.md 5.8, 5.9), not taken from the code under test.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import tcast
from tcast import CastMode, CastResult, UnsupportedError, exact
from tcast.cli import main
from tcast_ref.golden import GoldenSetError, Settings, generate, header_digest, load
from tcast_ref.golden._describe import datatype_description
from tcast_ref.golden._files import header_bytes, npz_bytes, sha256
from tcast_ref.golden._flags import flags
from tcast_ref.golden._generate import _cast_set, cast_layout, set_files
from tcast_ref.golden._geometry import geometry

GOLDEN = Path(__file__).resolve().parents[3] / "tests" / "golden"
MX9 = "int8_e8m0_t16s2o1"


def _layout(code: str, **kw):
    st = Settings.of(code, **kw)
    return cast_layout(st, geometry(st.dtype))


# ------------------------------------------------------------------ layout and memh
def test_meta_field_follows_the_scale_with_one_word_per_subtile():
    # mx9: 16 elements, 8 subtiles of 2, 1 offset bit each (one hex digit per word)
    lay = _layout(MX9)
    assert [(f.name, f.count, f.bits, f.format) for f in lay.fields] == [
        ("IN", 16, 32, "float32"),
        ("LEN", 1, 16, "extent"),
        ("SCALE", 1, 8, "e8m0"),
        ("META", 8, 1, "offset"),
        ("OUT", 16, 8, "int8"),
        ("FLAGS", 16, 8, "flags8"),
    ]
    # 512 + 16 + 8 + 8*4 + 128 + 128 = 824 bits; META below IN, LEN and SCALE
    assert lay.memh_bits == 824
    meta = next(r for r in lay.memh_ranges() if r["name"] == "META")
    assert meta == {"name": "META", "msb": 287, "lsb": 256, "word_bits": 4, "count": 8}
    # mxfp4e: 32 elements, 4 subtiles of 8, 2 mapping bits
    lay = _layout("cb42fe0123_e3m2fnuz_e8m0_t32s8")
    f = lay.field("META")
    assert (f.count, f.bits, f.format) == (4, 2, "mapping")
    meta = next(r for r in lay.memh_ranges() if r["name"] == "META")
    assert (meta["msb"], meta["lsb"]) == (1447 - 1024 - 16 - 8, 384)
    # no META in virtual sets (no codes, no scale) nor for a one-table codebook (NF4)
    assert _layout(MX9, castmode="virtual").field("META") is None
    assert _layout("cb40_float32_nf4_float32_t64").field("META") is None


def test_meta_words_of_2d_subtiles_in_c_order_with_absent_subtiles():
    geo = geometry(tcast.datatype("int8_e8m0_t8s2o1_t8s4"))
    assert (geo.tile_shape, geo.sub_shape, geo.meta_grid, geo.meta_count) == (
        (8, 8),
        (2, 4),
        (4, 2),
        8,
    )
    # extent 3 x 5: subtile rows 0-1 (elements 0..3), columns 0-1 (0..7) are present
    live = geo.meta_live(np.array([[3, 5], [8, 8], [1, 1]]), 3)
    assert live.astype(int).tolist() == [
        [1, 1, 1, 1, 0, 0, 0, 0],
        [1] * 8,
        [1, 0, 0, 0, 0, 0, 0, 0],
    ]
    shape = geo.to_array(np.zeros((2, 64), np.float32), (3, 5)).shape
    assert geo.meta_shape(shape, (3, 5)) == (2, 2, 2)
    words = geo.meta_from_array(np.arange(8).reshape(2, 2, 2), (3, 5))
    assert words.tolist() == [[0, 1, 2, 3, 0, 0, 0, 0], [4, 5, 6, 7, 0, 0, 0, 0]]


# ------------------------------------------------------------------ header
def test_header_lists_every_codebook_mapping_as_compute_codes_and_float32():
    d = datatype_description(tcast.datatype("cb41fi_e2m2fnuz_e8m0_t32s4"))
    el = d["element"]
    assert (el["kind"], el["bits"], el["meta_bits"], el["mappings"], el["max"]) == (
        "codebook",
        4,
        1,
        2,
        "7",
    )
    f, i = el["tables"]
    # e2m2fnuz (bias 1): 0.5 = subnormal 2/4 (0x2), 1 = 0x4, 1.5 = 0x6, 2 = 0x8, 3 = 0xA,
    # 4 = 0xC, 6 = 0xE; no -0 in fnuz (-0 entries take the code of 0), sign bit 0x10
    assert f["compute_codes"] == [
        "0x0", "0x2", "0x4", "0x6", "0x8", "0xA", "0xC", "0xE",
        "0x0", "0x12", "0x14", "0x16", "0x18", "0x1A", "0x1C", "0x1E",
    ]  # fmt: skip
    assert f["float32"][:8] == [
        "0x00000000", "0x3F000000", "0x3F800000", "0x3FC00000",
        "0x40000000", "0x40400000", "0x40800000", "0x40C00000",
    ]  # fmt: skip
    assert f["float32"][8] == "0x80000000" and f["values"][8] == "-0"
    assert i["values"][:8] == ["0", "1", "2", "3", "4", "5", "6", "7"]
    assert i["compute_codes"][5:8] == ["0xD", "0xE", "0xF"]  # 5, 6, 7: 4 * 1.25, 1.5, 1.75
    assert d["meta"]["format"] == "mapping" and d["meta"]["subtile_sizes"] == [4]
    assert d["tiles"][0]["subtile"] == 4 and d["tiles"][0]["offset_bits"] == 0
    # NF4: one ascending float32 table, no metadata
    d = datatype_description(tcast.datatype("cb40_float32_nf4_float32_t64"))
    (t,) = d["element"]["tables"]
    assert t["float32"][0] == "0xBF800000" and t["float32"][15] == "0x3F800000"
    assert t["compute_codes"][7] == "0x0" and "meta" not in d
    # other datatypes' headers are as they were: no subtile keys, no meta
    d = datatype_description(tcast.mxfp4)
    assert "meta" not in d and set(d["tiles"][0]) == {
        "code", "size", "channel", "dim", "sparse_n", "sparse_m",
    }  # fmt: skip


def test_header_of_an_offset_set_states_the_offset_rule():
    gs = generate(Settings.of(MX9, count=0))
    assert gs.header["datatype"]["meta"]["format"] == "offset"
    assert "2^B - 1 if a = 0" in gs.header["policies"]["subtile_offset"]
    pats = gs.header["cases"]["inputs"]["pattern_order"]
    assert pats[-3:] == ["offset_binades", "offset_roundup", "offset_zero_subtiles"]


# ------------------------------------------------------------------ flags
def test_flags_of_codebook_elements_saturation_and_zero():
    dt = tcast.datatype("cb41fi_e2m2fnuz_e8m0_t32s4")
    # symmetric: code 7 / 15 is the largest magnitude (k = 7); 0 and 8 are +0 and -0
    x = np.array([7.5, -8.0, 0.1, -0.1, 1.4], np.float32)
    codes = np.array([7, 15, 0, 8, 3], np.uint8)
    d = np.array([7.0, -7.0, 0.0, -0.0, 1.5], np.float32)
    assert flags(x, codes, d, dt).tolist() == [0x05, 0x05, 0x03, 0x03, 0x01]
    # ascending given table (NF4): index 15 (1.0) and 0 (-1.0) saturate; index 7 is 0.0
    dt = tcast.datatype("cb40_float32_nf4_float32_t64")
    x = np.array([1.25, -1.5, 0.03, 1.0], np.float32)
    codes = np.array([15, 0, 7, 15], np.uint8)
    d = np.array([1.0, -1.0, 0.0, 1.0], np.float32)
    assert flags(x, codes, d, dt).tolist() == [0x05, 0x05, 0x03, 0x00]


# ------------------------------------------------------------------ verify
def _copy(tmp_path: Path, name: str) -> Path:
    d = tmp_path / name
    shutil.copytree(GOLDEN / name, d)
    return d


def _with_word(d: Path, out: Path, extent: str, word: int, value) -> int:
    """Write ``out``: vectors.txt with word ``word`` of the first case line of LEN ``extent``
    set to ``value(old word)``; returns that case's number."""
    lines = (d / "vectors.txt").read_text().splitlines()
    n = next(n for n, t in enumerate(lines[1:], 1) if t.split()[16] == extent)
    words = lines[n].split()
    words[word] = value(words[word])
    lines[n] = " ".join(words)
    out.write_text("\n".join(lines) + "\n")
    return n


def test_verify_compares_meta_words_and_skips_absent_subtiles(tmp_path, capsys):
    d = GOLDEN / "mx9"
    # words: IN[0..15] LEN SCALE META[0..7] OUT FLAGS: META[j] is word 18 + j
    flip = {"0": "1", "1": "0"}.__getitem__
    case = _with_word(d, tmp_path / "a.txt", "0010", 18, flip)
    assert main(["verify", str(d), "--actual", str(tmp_path / "a.txt")]) == 1
    out = capsys.readouterr().out
    assert "1 of 12551 output words differ" in out
    assert f"case {case}: " in out and "=> META[0] observed" in out
    # a partial tile of one element: META[1..7] are absent, a word there is not compared
    _with_word(d, tmp_path / "b.txt", "0001", 25, flip)
    assert main(["verify", str(d), "--actual", str(tmp_path / "b.txt")]) == 0


def _redigest(d: Path, h: dict) -> None:
    for name, meta in h["files"].items():
        data = (d / name).read_bytes()
        meta["bytes"], meta["sha256"] = len(data), sha256(data)
    h["header_sha256"] = header_digest(h)
    (d / "header.json").write_bytes(header_bytes(h))


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("count", 7, "field 'META' has count 7, not 8"),
        ("bits", 2, "field 'META' has bits 2, not 1"),
        ("format", "mapping", "field 'META' has format 'mapping', not 'offset'"),
    ],
)
def test_a_header_whose_meta_field_disagrees_with_the_datatype_is_refused(
    tmp_path, capsys, key, value, said
):
    d = _copy(tmp_path, "mx9")
    h = json.loads((d / "header.json").read_text())
    field = next(f for f in h["layout"]["fields"] if f["name"] == "META")
    field[key] = value
    _redigest(d, h)
    assert main(["verify", str(d)]) == 2
    err = capsys.readouterr().err
    assert "malformed set" in err and said in err


def _table_entry(h: dict) -> None:
    h["datatype"]["element"]["tables"][1]["float32"][3] = "0x40000000"


def _table_value(h: dict) -> None:
    h["datatype"]["element"]["tables"][0]["values"][1] = "3"


def _memh_range(h: dict) -> None:
    h["layout"]["memh_ranges"][3]["lsb"] += 1


def _mapping_rule(h: dict) -> None:
    h["policies"]["codebook_mapping"] = "ties: the highest index"


def _symmetric(h: dict) -> None:
    h["datatype"]["element"]["symmetric"] = False


def _subtile(h: dict) -> None:
    h["datatype"]["tiles"][0]["subtile"] = 4


def _flag_count(h: dict) -> None:
    h["counts"]["flagged"]["inexact"] += 1


def _outputs_digest(h: dict) -> None:
    h["digests"]["outputs_sha256"] = "0" * 64


@pytest.mark.parametrize(
    "edit",
    [
        _table_entry,
        _table_value,
        _memh_range,
        _mapping_rule,
        _symmetric,
        _subtile,
        _flag_count,
        _outputs_digest,
    ],
)
def test_a_header_whose_decoding_keys_are_forged_is_refused(tmp_path, capsys, edit):
    """A testbench decodes with the header's tables, ranges and rules: a re-digested header
    that says anything else than this tcast derives from the set's settings is malformed."""
    d = _copy(tmp_path, "mxfp4e")
    h = json.loads((d / "header.json").read_text())
    edit(h)
    _redigest(d, h)
    assert main(["verify", str(d)]) == 2
    err = capsys.readouterr().err
    assert "malformed set" in err and "header" in err


def test_a_meta_word_beyond_the_extent_must_be_zero(tmp_path):
    d = _copy(tmp_path, "mx9")
    h = json.loads((d / "header.json").read_text())
    with np.load(d / "vectors.npz") as z:
        arrays = {k: z[k] for k in z.files}
    row = int(np.flatnonzero(arrays["len"][:, 0] == 1)[0])
    arrays["meta"][row, 5] = 1
    st = Settings.of(MX9)
    lset_layout = cast_layout(st, geometry(st.dtype))
    cols = {k.upper(): v for k, v in arrays.items()}
    files = set_files(st, lset_layout, cols)
    files["vectors.npz"] = npz_bytes(arrays)
    for name, data in files.items():
        (d / name).write_bytes(data)
    _redigest(d, h)
    with pytest.raises(GoldenSetError, match="META word of a subtile beyond LEN is not 0"):
        load(d)


# ------------------------------------------------------------------ compress, levels
def test_compress_sets_pack_the_meta_words():
    for code, bits in ((MX9, 1), ("cb42fe0123_e3m2fnuz_e8m0_t32s8", 2)):
        gs = generate(Settings.of(code, castmode="compress", count=2))
        meta = gs.columns["META"].reshape(-1).astype(np.uint8)
        # 1 bit: eight per byte, the first in the lowest bit; 2 bits: four per byte, low first
        per = 8 // bits
        padded = np.zeros(-(-meta.size // per) * per, np.uint8)
        padded[: meta.size] = meta
        want = (padded.reshape(-1, per) << (bits * np.arange(per, dtype=np.uint8))).sum(1)
        assert gs.files["packed_meta.bin"] == want.astype(np.uint8).tobytes()
        assert sorted(gs.files) == [
            "packed.bin",
            "packed_meta.bin",
            "vectors.memh",
            "vectors.npz",
            "vectors.txt",
        ]


def test_the_packing_policy_covers_every_code_width_and_the_meta_stream():
    """The header alone says how packed.bin holds 5-bit codes and packed_meta.bin its words."""
    rule = generate(Settings.of("int5_e8m0_t16s2o1", castmode="compress", count=0)).header
    rule = rule["policies"]["packing"]
    assert "codes of 1 to 8 bits form one little-endian bit stream" in rule
    assert "packed_meta.bin: the META words of every line in line order" in rule
    assert "absent subtiles' 0 included" in rule
    plain = generate(Settings.of("mxfp4", castmode="compress", count=0)).header["policies"]
    assert "packed_meta.bin" not in plain["packing"]


def test_compress_sets_pack_3_and_5_bit_codes_as_a_dense_stream():
    # mx4 (int3) and mx6 (int5): element i in stream bits [w*i, w*i + w), stream bit j is
    # bit j mod 8 of byte j / 8 (SEMANTICS.md 8)
    for code, bits in (("int3_e8m0_t16s2o1", 3), ("int5_e8m0_t16s2o1", 5)):
        gs = generate(Settings.of(code, castmode="compress", count=1))
        out = gs.columns["OUT"].reshape(-1).astype(np.int64)
        stream = ((out[:, None] >> np.arange(bits)) & 1).astype(np.uint8).reshape(-1)
        assert gs.files["packed.bin"] == np.packbits(stream, bitorder="little").tobytes()
        assert len(gs.files["packed.bin"]) == -(-out.size * bits // 8)


def test_exhaustive_decode_sets_of_meta_datatypes_are_refused():
    with pytest.raises(UnsupportedError, match="use --level 1 or 2") as offsets:
        generate(Settings.of(MX9, level="exhaustive"))
    assert "exponent offsets" in str(offsets.value) and "codebook" not in str(offsets.value)
    with pytest.raises(UnsupportedError, match=r"codebook tables.*use --level 1 or 2"):
        generate(Settings.of("cb40_float32_nf4_float32_t64", level="exhaustive"))


# ------------------------------------------------------------------ the committed sets
def _columns(name: str) -> dict[str, np.ndarray]:
    with np.load(GOLDEN / name / "vectors.npz") as z:
        return {k.upper(): z[k] for k in z.files}


def test_committed_mx9_set_holds_the_offset_edge_cases():
    c = _columns("mx9")
    meta = np.repeat(c["META"], 2, axis=1)  # the offset of each element's pair
    live = (c["FLAGS"] & 0x80) == 0
    mag = np.where(c["OUT"] >= 128, 256 - c["OUT"].astype(int), c["OUT"])
    # a value of an offset pair that rounds up to 2^E: saturated to 127 steps, overflow flag
    assert ((meta == 1) & (mag == 127) & ((c["FLAGS"] & 0x04) != 0) & live).any()
    # an all-zero pair in a block that is not all zero: the largest offset
    x = c["IN"].astype(np.int64) & 0x7FFFFFFF
    zero_pair = (x.reshape(len(x), 8, 2) == 0).all(axis=2)
    nonzero_block = (x != 0).any(axis=1) & (c["SCALE"][:, 0] != 0xFF)
    assert (zero_pair & nonzero_block[:, None] & (c["META"] == 1)).any()
    assert ((c["META"] == 0) & nonzero_block[:, None]).any()


@pytest.mark.parametrize(("name", "mappings"), [("mxfp4m", 2), ("mxfp4e", 4), ("mxfp4f4", 4)])
def test_committed_codebook_sets_choose_every_mapping(name, mappings):
    c = _columns(name)
    assert set(np.unique(c["META"]).tolist()) == set(range(mappings))


# ------------------------------------------------------------------ the pipeline, exactly
class _ExactEngine:
    """``tcast.exact`` behind the golden generator's engine interface (no tcast_ref cast)."""

    def cast_numpy(self, x, dt, *, castmode, rbits, roundmode, scalemode, saturate):
        rb = None if rbits is None else np.asarray(rbits).reshape(-1).tolist()
        r = exact.cast_array(
            np.asarray(x, np.float32).reshape(-1).tolist(),
            x.shape,
            dt,
            roundmode=roundmode,
            scalemode=scalemode,
            saturate=saturate,
            rbits=rb,
        )
        res = CastResult(
            data=np.array(r.codes, np.uint32).reshape(x.shape).astype(np.uint8),
            scale=np.array(r.scale, np.uint32).reshape(r.scale_shape),
            zero=None,
            tenscale=None if r.tenscale is None else np.array(r.tenscale, np.uint32),
            mask=None,
            meta=None if r.meta is None else np.array(r.meta, np.uint8).reshape(r.meta_shape),
            dtype=dt,
            shape=x.shape,
            castmode=CastMode.ACTUAL,
            input_dtype="float32",
            engine="exact",
        )
        res.extra = {"values": np.array(r.values, np.float32).reshape(x.shape)}
        return res

    def upcast_numpy(self, res):
        return res.extra["values"]


@pytest.mark.full
@pytest.mark.parametrize(
    "code",
    [
        "int8_e8m0_t8s2o1_t8s4",  # 2-D subtiles
        "int8_bfloat16_float32_t16s2o1",  # offsets under a tensor over tile scales
        "cb41fi_e2m2fnuz_e4m3fn_float32_t32s4",  # a two-level codebook
        "cb41fi_e2m2fnuz_e8m0_t8s2_t8s4",  # a codebook's 2-D subtiles
        "cb31ie_int5_e8m0_t16s2",  # an int compute type
    ],
)
def test_a_set_of_a_grammar_variant_is_the_exact_models(code):
    """Every output column of a level 1 set (META placement of 2-D and partial subtiles, two-level
    tensors) recomputed through the same geometry with ``tcast.exact`` as the engine."""
    st = Settings.of(code, count=8)
    gs = generate(st)
    x2 = np.ascontiguousarray(gs.columns["IN"]).view(np.float32)
    _, cols, _ = _cast_set(st, True, _ExactEngine(), x2, None, gs.columns.get("LEN"))
    for f in gs.layout.fields:
        if f.role == "output":
            want = np.asarray(cols[f.name]).reshape(gs.columns[f.name].shape)
            assert np.array_equal(want, gs.columns[f.name]), f.name

"""Hostile inputs to the spec layer: huge shapes, huge numbers in codes, half-imported torch,
arguments of the wrong type. Each is refused at once with a TcastError whose message is
short, or handled as the value it stands for; never a hang or a raw Python exception.
"""

from __future__ import annotations

import dataclasses
import signal
import sys
import threading
import types
from contextlib import contextmanager

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tcast
from tcast import SpecError, TcastError, UnsupportedError, block_layout, exact
from tcast.cli import main
from tcast.kit._trace import tracing

#: A message quotes at most 60 characters of an input (each escaped in at most 10), plus
#: its own words: far below the inputs of thousands of characters these tests give.
MESSAGE_BOUND = 2000

SPARSE = "e4m3fn_e8m0_t32n2m4"


@contextmanager
def finishes_within(seconds: float):
    """Fail (TimeoutError) a block that runs longer than ``seconds`` (where SIGALRM exists)."""
    if (
        not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return

    def late(signum, frame):
        raise TimeoutError(f"took longer than {seconds} s")

    old = signal.signal(signal.SIGALRM, late)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _x(shape=(4, 64), seed=0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ----------------------------------------------------------------- huge shapes
def test_kept_count_of_a_huge_sparse_shape_is_arithmetic_not_a_loop_over_tiles():
    dt = tcast.datatype(SPARSE)
    with finishes_within(2):
        lay = block_layout((4, 2**40), dt)
        assert lay.kept_count == 4 * 2**39  # 2 of every 4, whole tiles of 32
        # a partial last tile of 37 = 9 groups of 4 (18 kept) and one real element (1 kept)
        assert block_layout((3, 2**40 + 37), dt).kept_count == 3 * (2**39 + 19)


def test_upcast_of_a_sparse_result_claiming_a_huge_shape_refuses_at_once():
    r = tcast.cast(_x(), SPARSE, castmode="actual", engine="ref")
    with finishes_within(2), pytest.raises(SpecError, match="shape"):
        tcast.upcast(dataclasses.replace(r, shape=(4, 2**40)))


# ------------------------------------------------------ a half-imported torch
@pytest.mark.parametrize(
    "stub",
    [
        types.ModuleType("torch"),  # before torch.compiler is imported
        types.SimpleNamespace(compiler=types.ModuleType("torch.compiler")),  # half of it
    ],
    ids=["no-compiler", "no-is_compiling"],
)
def test_a_half_imported_torch_is_not_tracing_and_numpy_casts_go_on(monkeypatch, stub):
    x = _x()
    want = tcast.cast(x, "mxfp4", engine="ref")
    monkeypatch.setitem(sys.modules, "torch", stub)
    assert tracing() is False
    # fresh rules (no memo) so that the cast consults tracing() itself
    got = tcast.cast(x, tcast.datatype("e2m1f", "e8m0_t32", name="fresh"), engine="ref")
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_tracing_is_false_without_torch(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert tracing() is False


# ------------------------------------------------------ huge numbers in codes
TOO_MANY = "1" * 4301  # one digit past Python's own limit on int("...")

HUGE_NUMBER_CODES = [
    (tcast.number, "int" + TOO_MANY),
    (tcast.number, "uint" + TOO_MANY),
    (tcast.number, "e" + TOO_MANY + "m3"),
    (tcast.number, "e4m" + TOO_MANY),
    (tcast.number, "e4m3b" + TOO_MANY + "fn"),
    (tcast.number, "binary8p" + TOO_MANY),
    (tcast.number, "float8_e4m3b" + TOO_MANY),
    (tcast.scale, "e8m0_t" + TOO_MANY),
    (tcast.scale, "e8m0_t32d-" + TOO_MANY),
    (tcast.scale, "e8m0_t32n" + TOO_MANY + "m4"),
    (tcast.scale, "e8m0_t32s" + TOO_MANY),
    (tcast.scale, "int" + TOO_MANY + "_t32"),
    (tcast.datatype, "int" + TOO_MANY),
    (tcast.datatype, "e2m1f_e8m0_t" + TOO_MANY),
    (tcast.datatype, "int" + TOO_MANY + "_e8m0_t32"),
]


@pytest.mark.parametrize(
    ("parse", "code"),
    HUGE_NUMBER_CODES,
    ids=[f"{parse.__name__}-{code[:14]}-{i}" for i, (parse, code) in enumerate(HUGE_NUMBER_CODES)],
)
def test_a_number_of_thousands_of_digits_in_a_code_is_a_short_spec_error(parse, code):
    with pytest.raises(SpecError, match="at most 9 digits") as info:
        parse(code)
    assert len(str(info.value)) < MESSAGE_BOUND


def test_the_digit_cap_is_nine_digits():
    with pytest.raises(SpecError, match=r"integer widths are 2\.\.32"):
        tcast.number("int999999999")
    with pytest.raises(SpecError, match="at most 9 digits, this one has 10"):
        tcast.number("int1000000000")
    with pytest.raises(SpecError, match="at most 9 digits"):
        tcast.scale("e8m0_t1024000000")


@pytest.mark.parametrize(
    "fields",
    [{"ebits": 10**5000}, {"mbits": -(10**5000)}, {"bias": 10**10}],
    ids=["ebits", "mbits", "bias"],
)
def test_spec_fields_too_large_to_print_are_spec_errors(fields):
    base = {"kind": tcast.Kind.FLOAT, "ebits": 4, "mbits": 3, "bias": 7}
    with pytest.raises(SpecError, match="out of range") as info:
        tcast.NumberSpec(**{**base, **fields})
    assert len(str(info.value)) < 200
    with pytest.raises(SpecError, match="out of range"):
        tcast.TileSpec(size=32, dim=-(10**5000))


@pytest.mark.parametrize("filler", ["x", "\x00", "\U0010ffff", "_"])
@pytest.mark.parametrize("parse", [tcast.number, tcast.scale, tcast.datatype])
def test_a_megabyte_code_gives_a_message_quoting_at_most_a_prefix_once(parse, filler):
    code = "e8m0_" + filler * 1_000_000
    with pytest.raises(TcastError) as info:
        parse(code)
    text = str(info.value)
    assert len(text) < MESSAGE_BOUND
    assert "(1000005 characters)" in text or "(1000000 characters)" in text
    assert text.count("characters)") <= 2  # the code, and at most the segment at fault


@settings(
    max_examples=40,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    head=st.text(alphabet="em0123456789bfnuzt_sd-intx.", max_size=12),
    filler=st.sampled_from(["1", "9", "0", "_", "t", "m", "\x00", "é"]),
    count=st.integers(60, 6000),
    tail=st.text(alphabet="em0123456789bfnuzt_sd-", max_size=8),
)
def test_long_codes_give_only_short_spec_errors(head, filler, count, tail):
    code = head + filler * count + tail
    for parse in (tcast.number, tcast.scale, tcast.datatype):
        try:
            parse(code)
        except (SpecError, UnsupportedError) as err:
            assert len(str(err)) < MESSAGE_BOUND, (parse.__name__, len(str(err)))


def test_tcast_info_of_a_huge_number_exits_2_with_a_short_message(capsys):
    assert main(["info", "int" + TOO_MANY]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("tcast info: error: ") and "at most 9 digits" in err
    assert "Traceback" not in err and len(err) < MESSAGE_BOUND
    assert err.count("(4304 characters)") == 1  # the token, quoted once


def test_tcast_info_of_a_megabyte_token_quotes_it_once(capsys):
    assert main(["info", "e8m0_" + "\x00" * 1_000_000]) == 2
    err = capsys.readouterr().err
    assert len(err) < MESSAGE_BOUND and err.count("(1000005 characters)") == 1


# ---------------------------------------------------- arguments of the wrong type
@pytest.mark.parametrize("name", [5, 5.0, True, b"ref", ["ref"]], ids=repr)
def test_an_engine_named_by_a_non_str_is_a_spec_error_naming_it(name):
    x = _x()
    r = tcast.cast(x, "mxfp8", castmode="actual", engine="ref")
    calls = [
        lambda: tcast.cast(x, "mxfp8", engine=name),
        lambda: tcast.cast_dual(x, "mxfp8", engine=name),
        lambda: tcast.upcast(r, engine=name),
        lambda: tcast.select_engine(x, tcast.mxfp8, tcast.CastModes(), engine=name),
    ]
    for call in calls:
        with pytest.raises(SpecError, match=f"str.*got {repr(name)[:8]}".replace("[", r"\[")):
            call()


def test_an_unknown_engine_name_is_quoted_cut():
    with pytest.raises(tcast.EngineNotFoundError, match=r"\(100000 characters\)") as info:
        tcast.cast(_x(), "mxfp8", engine="z" * 100_000)
    assert len(str(info.value)) < MESSAGE_BOUND


NOT_SEQUENCES = [None, 5, 2.5, "abc", b"ab", {1.0: 2.0}]


@pytest.mark.parametrize("values", NOT_SEQUENCES, ids=repr)
def test_exact_cast_block_of_a_non_sequence_is_a_spec_error(values):
    with pytest.raises(SpecError, match="must be a sequence of numbers"):
        exact.cast_block(values, "mxfp8")


@pytest.mark.parametrize(
    "call",
    [
        lambda: exact.cast_block([1.0] * 32, SPARSE, keep=5),
        lambda: exact.cast_block([1.0] * 32, "mxfp8", roundmode="stochastic", rbits=5),
        lambda: exact.cast_block([1.0] * 16, "nvfp4", tensor_amax="x"),
        lambda: exact.cast_array(None, (4,), "mxfp8"),
        lambda: exact.cast_array([1.0] * 4, None, "mxfp8"),
        lambda: exact.cast_array([1.0] * 4, 4, "mxfp8"),
        lambda: exact.cast_array([1.0] * 4, (2, 2.5), "mxfp8"),
        lambda: exact.cast_array(["x"] * 4, (2, 2), "mxfp8"),
        lambda: exact.cast_array([1.0] * 4, (2, 2), "mxfp8", roundmode="stochastic", rbits=3),
    ],
    ids=[
        "keep",
        "block-rbits",
        "tensor_amax",
        "values",
        "shape-None",
        "shape-int",
        "shape-float-size",
        "value-str",
        "array-rbits",
    ],
)
def test_exact_arguments_of_the_wrong_type_are_spec_errors(call):
    with pytest.raises(SpecError):
        call()


def test_exact_cast_array_takes_numpy_integer_sizes():
    a = exact.cast_array([1.0, 2.0, 3.0, 4.0], (np.int64(2), np.int32(2)), "mxfp8")
    assert a.shape == (2, 2) and all(type(n) is int for n in a.shape)


def _raw_parts(r: tcast.CastResult) -> list:
    return [np.asarray(getattr(r, p)).tobytes() for p in ("data", "scale", "tenscale", "mask")]


@pytest.mark.parametrize(
    "sizes",
    [
        (np.int64(4), np.int64(64)),
        (np.int32(4), np.uint16(64)),
        [4, 64],
        (torch.tensor(4), torch.tensor(64)),
    ],
    ids=["int64", "int32-uint16", "list", "0d-tensors"],
)
@pytest.mark.parametrize("dt", ["mxfp4", SPARSE, "nvfp4"])
def test_castresult_shapes_of_integer_types_upcast_as_their_ints(sizes, dt):
    x = _x()
    for arr in (x, torch.from_numpy(x)):
        r = tcast.cast(arr, dt, castmode="compress")
        want = np.asarray(tcast.upcast(r))
        odd = dataclasses.replace(r, shape=sizes)
        got = np.asarray(tcast.upcast(odd))
        assert got.view(np.uint32).tobytes() == want.view(np.uint32).tobytes()
        assert tuple(odd.shape) == tuple(sizes)  # the caller's result is left as it is


@pytest.mark.parametrize(
    ("sizes", "kind"),
    [((4.0, 64), "float"), ((True, 64), "bool"), (("4", 64), "str"), ((4, -64), "int"), (5, "int")],
)
def test_castresult_shapes_that_are_not_integer_sizes_are_refused_naming_the_type(sizes, kind):
    r = tcast.cast(_x(), "mxfp4", castmode="actual", engine="ref")
    with pytest.raises(SpecError, match=f"shape must be a tuple of sizes.*{kind}"):
        tcast.upcast(dataclasses.replace(r, shape=sizes))


@pytest.mark.parametrize("value", ["x" * 5000, "x'" * 2500, "x'\"" * 1700], ids=len)
def test_a_usage_error_quotes_a_long_argument_cut(capsys, value):
    # argparse echoes a rejected choice whole (in double quotes when it holds a single one);
    # a subcommand's parser (a plugin's: golden) must cut it like every other message
    assert main(["golden", "mxfp8", "--roundmode", value, "--out", "unused"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice" in err and len(err) < MESSAGE_BOUND

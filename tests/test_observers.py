"""Observers (SEMANTICS.md §5.13): the engines against each other and the peers they follow.

tcast_torch's observers (CPU, and CUDA where present) must give tcast_ref's bits; the
reference's ranges are checked against torch.ao's observers, TransformerEngine's delayed
scaling, Brevitas's percentile and ModelOpt's histogram percentile and MSE search, each
re-derived here where the package is too heavy, with every difference of §11 asserted.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.ao.quantization.observer import (
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    PerChannelMinMaxObserver,
)

import tcast
import tcast_ref
import tcast_torch
from tcast import SpecError
from tcast import observe as ob

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def _batches(shape=(24, 70), n=3, seed=0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    xs = [(rng.standard_t(4, shape) * s).astype(np.float32) for s in (1.0, 1.7, 0.6)[:n]]
    xs[min(1, n - 1)][3, 5] = np.nan  # ignored by every method
    xs[-1][0, 0] = -np.inf
    return xs


def _bits(a) -> np.ndarray:
    a = a.cpu().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)
    return a.astype(np.float32).view(np.uint32)


CASES = [
    ("mxfp8", ob.MinMax()),
    ("mxfp4", ob.MinMax(momentum=0.01)),
    ("mxint8", ob.Percentile(99.0)),
    ("mxfp8_2d", ob.Percentile(90.0)),
    ("mxfp4", ob.Mse()),
    ("nvfp4", ob.MinMax()),
    ("nvfp4", ob.Mse()),
    ("nvfp4", ob.AmaxHistory(length=2)),
    ("uint8_float32_uint8_t0", ob.MinMax()),
    ("uint4_fic", ob.MinMax(momentum=0.1)),
    ("uint8_FF", ob.MinMax()),  # all-positive batches below: the range still holds 0
    ("int8_float32_t0", ob.Mse()),
    ("e4m3fn_float32", ob.HistogramPercentile(99.9, bins=256)),
    ("e4m3fn_float32", ob.Entropy(bins=256)),
    ("mxfp8", ob.AmaxHistory(length=3, algo="most_recent", margin=1)),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("name", "method"), CASES, ids=lambda v: getattr(v, "name", v))
def test_torch_observer_gives_the_reference_bits(name, method, device) -> None:
    ref = tcast_ref.Observer(name, method, transpose_scale=name.endswith("_2d"))
    tor = tcast_torch.Observer(name, method, transpose_scale=name.endswith("_2d"))
    xs = _batches()
    if name == "uint8_FF":
        xs = [np.abs(x) + np.float32(1) for x in xs]
    for x in xs:
        ref.update(x)
        tor.update(torch.from_numpy(x).to(device))
    if method.two_pass:
        for x in xs:
            ref.search(x)
            tor.search(torch.from_numpy(x).to(device))
    a, b = ref.scales(), tor.scales()
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].shape == tuple(b[k].shape)
        np.testing.assert_array_equal(_bits(a[k]), _bits(b[k]), err_msg=k)
    ra, rb = ref.ranges(), tor.ranges()
    for k in ra:
        np.testing.assert_array_equal(_bits(ra[k]), _bits(rb[k]), err_msg=k)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    ("length", "algo", "every"),
    [
        (3, "max", 1),
        (1, "max", 1),
        (4, "most_recent", 1),
        (18, "max", 1),
        (18, "max", 7),
        (5, "most_recent", 3),
    ],
)
def test_torch_amax_history_keeps_the_window_over_many_rounds(
    length, algo, every, device, monkeypatch
):
    """The torch observer's lazy history (a ring of batch amaxes, each finished round folded
    into its last positive amaxes in groups of 16; what a read derives kept for the next)
    gives the reference's chosen amax and scales read after every batch or every few:
    rising, falling and all-zero batches (which keep the last amax) over several rounds, and
    all-zero windows whose last positive amax is rounds old. On CUDA the scales come from
    the compiled recipe from the second read on."""
    from tcast_torch import _observe

    monkeypatch.setattr(_observe, "_EAGER_READS", 1)
    rng = np.random.default_rng(3)
    scales = [1.0, 4.0, 0.5, 0.0, 0.25, 8.0, 0.125, 0.0, 0.0, 2.0, 0.5, 3.0]
    if length > 16:
        scales = scales + [0.0] * 25 + [0.5] + scales
    ref = tcast_ref.Observer("mxfp8", ob.AmaxHistory(length, algo, margin=2))
    tor = tcast_torch.Observer("mxfp8", ob.AmaxHistory(length, algo, margin=2))
    for i, s in enumerate(scales):
        x = (rng.standard_normal((4, 64)) * s * np.exp2(rng.integers(-3, 4, (4, 1)))).astype(
            np.float32
        )
        ref.update(x)
        tor.update(torch.from_numpy(x).to(device))
        if i % every == every - 1 or i == len(scales) - 1:
            want, got = ref.ranges()["amax"], tor.ranges()["amax"]
            np.testing.assert_array_equal(_bits(want), _bits(got), err_msg=f"batch {i}")
            want, got = ref.scales()["scale"], tor.scales()["scale"]
            np.testing.assert_array_equal(_bits(want), _bits(got), err_msg=f"scale {i}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("q", [99.9, 50.0, 3.0])
def test_torch_percentile_of_long_rows_selects_from_either_end(q, device) -> None:
    """Rows of at least 1024 elements select their order statistic with topk from the nearer
    end (the largest for high q, the smallest for low q) instead of sorting: the reference's
    values for channels and a whole tensor, with non-finite elements, a row of only NaN and
    a row of only zeros."""
    rng = np.random.default_rng(5)
    x = (rng.standard_t(3, (5, 1536)) * np.exp2(rng.integers(-4, 5, (5, 1)))).astype(np.float32)
    x[0, rng.integers(0, 1536, 40)] = np.nan
    x[1, :7] = np.inf
    x[2] = np.nan
    x[3] = 0.0
    for name in ("int8_float32_t0", "e4m3fn_float32"):
        ref = tcast_ref.Observer(name, ob.Percentile(q))
        tor = tcast_torch.Observer(name, ob.Percentile(q))
        for s in (1.0, 0.5):
            ref.update(x * np.float32(s))
            tor.update(torch.from_numpy(x * np.float32(s)).to(device))
        want, got = ref.ranges()["amax"], tor.ranges()["amax"]
        np.testing.assert_array_equal(_bits(want), _bits(got), err_msg=name)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="a CUDA kernel's contraction")
@pytest.mark.parametrize("name", ["mxfp8", "uint8_float32_uint8_t32", "int8_float32_t0"])
def test_cuda_moving_average_rounds_each_operation_once(name) -> None:
    """The moving average fused into the compiled CUDA reduction is three roundings, not a
    fused multiply-add (which differs in about 0.6% of the averages): the reference's bits
    on thousands of blocks (rows of 32, and channels reduced in chunks)."""
    rng = np.random.default_rng(11)
    ref = tcast_ref.Observer(name, ob.MinMax(momentum=0.01))
    tor = tcast_torch.Observer(name, ob.MinMax(momentum=0.01))
    for s in (1.0, 3.0, 0.3):
        x = (rng.standard_normal((512, 1024)) * s).astype(np.float32)
        ref.update(x)
        tor.update(torch.from_numpy(x).cuda())
    ra, rb = ref.ranges(), tor.ranges()
    for k in ra:
        np.testing.assert_array_equal(_bits(ra[k]), _bits(rb[k]), err_msg=k)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the compiled scale recipe runs on CUDA")
@pytest.mark.parametrize(
    ("name", "method"),
    [
        ("e4m3fn_float32", ob.AmaxHistory(length=4, margin=-3)),
        ("nvfp4", ob.MinMax()),
        ("uint8_float32_uint8_t0", ob.MinMax()),
        ("uint4_fic", ob.MinMax()),
        ("int8_bfloat16_t32", ob.MinMax()),
        ("mxfp8", ob.AmaxHistory(length=3, algo="most_recent", margin=1)),
        ("e2m1f_float32_float32_t16", ob.MinMax()),  # stays eager (float32 under float32)
        ("nvfp4", ob.AmaxHistory(length=3)),
        ("mxfp8", ob.AmaxHistory(length=1, margin=2)),
    ],
    ids=str,
)
def test_cuda_scales_read_after_every_batch_give_the_reference_bits(name, method, monkeypatch):
    """Reads after every batch (delayed scaling) run the scale recipe as one compiled kernel
    after the first few: the reference's scale parts from the first read on, over blocks
    whose ranges span float32 from subnormals to the largest finite value."""
    from tcast_torch import _observe

    monkeypatch.setattr(_observe, "_EAGER_READS", 2)
    rng = np.random.default_rng(5)
    ref = tcast_ref.Observer(name, method)
    tor = tcast_torch.Observer(name, method)
    for i in range(6):
        x = rng.standard_normal((64, 64)) * np.exp2(rng.integers(-150, 127, (64, 1)))
        x = np.clip(x, -3e38, 3e38).astype(np.float32)
        if i == 3:
            x[:] = 0
        ref.update(x)
        tor.update(torch.from_numpy(x).cuda())
        with np.errstate(over="ignore"):  # uint ranges wider than float32: hi - lo is Inf
            a = ref.scales()
        b = tor.scales()
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_array_equal(_bits(a[k]), _bits(b[k]), err_msg=f"{k} {i}")


def test_an_observer_pickles_without_its_compiled_recipe() -> None:
    """An observer whose reads run compiled pickles (the compiled function, which belongs to
    the process, is left out and rebuilt on the next compiled read) and reads the same."""
    import pickle

    obs = tcast_torch.Observer("mxfp8", ob.AmaxHistory(length=3))
    for x in _batches():
        obs.update(torch.from_numpy(x))
    want = obs.scales()["scale"]
    obs._values_fn = lambda *args: None  # what a compiled read keeps: not picklable
    back = pickle.loads(pickle.dumps(obs))
    assert back._values_fn is None
    np.testing.assert_array_equal(_bits(want), _bits(back.scales()["scale"]))


def test_a_failed_compilation_of_the_scale_recipe_falls_back_to_eager(monkeypatch) -> None:
    """A compiler failure on a later read warns once and reads eagerly, with the same bits."""
    from tcast_torch import _observe

    def broken(*args):
        raise RuntimeError("no compiler here")

    x = _batches(n=1)[0]
    ref, tor = tcast_ref.Observer("mxfp8"), tcast_torch.Observer("mxfp8")
    ref.update(x)
    tor.update(torch.from_numpy(x))
    monkeypatch.setattr(_observe, "_EAGER_READS", 0)
    monkeypatch.setattr(_observe, "_compilable", lambda t: True)  # the reads only
    monkeypatch.setattr(_observe, "_compiled_values", lambda *key: broken)
    with pytest.warns(RuntimeWarning, match="compiling an observer's step failed"):
        got = tor.scales()["scale"]
    np.testing.assert_array_equal(_bits(ref.scales()["scale"]), _bits(got))
    assert getattr(broken, "tcast_failed", False)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the ranges kernel runs on CUDA")
@pytest.mark.parametrize("momentum", [None, 0.2])
@pytest.mark.parametrize(
    ("name", "shape"),
    [("uint8_float32_uint8_t32", (96, 4096)), ("uint8_float32_uint8_t0", (3, 65536))],
    ids=["rows_of_32", "two_passes"],
)
def test_cuda_uint_ranges_of_bfloat16_blocks_give_the_reference_bits(name, shape, momentum):
    """The ranges kernel on bfloat16 blocks (their subnormals too: the kernel converts each
    element exactly) in rows of 32 and in long rows reduced in two passes, against the
    reference on the same values in float32."""
    rng = np.random.default_rng(9)
    ref = tcast_ref.Observer(name, ob.MinMax(momentum))
    tor = tcast_torch.Observer(name, ob.MinMax(momentum))
    for s in (1.0, 3.0):
        x = rng.standard_normal(shape) * s * np.exp2(rng.integers(-135, 100, (shape[0], 1)))
        xb = torch.from_numpy(x.astype(np.float32)).to(torch.bfloat16)
        xb[0, :7] = torch.tensor([1e-40, -1e-40, 9e-39, -0.0, float("nan"), float("-inf"), 0])
        ref.update(xb.float().numpy())
        tor.update(xb.cuda())
    ra, rb = ref.ranges(), tor.ranges()
    for k in ra:
        np.testing.assert_array_equal(_bits(ra[k]), _bits(rb[k]), err_msg=k)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("momentum", [None, 0.3])
def test_a_uint_block_of_negative_zeros_has_the_range_plus_zero(momentum, device) -> None:
    """Blocks of -0 (and NaN) have the range [+0, +0], not -0 (a max of -0 and +0 may give
    either), on every engine and device."""
    x = np.full((3, 32), -0.0, np.float32)
    x[1] = np.nan
    x[2, 5] = np.nan
    ref = tcast_ref.Observer("uint8_float32_uint8_t32", ob.MinMax(momentum))
    tor = tcast_torch.Observer("uint8_float32_uint8_t32", ob.MinMax(momentum))
    for _ in range(2):
        ref.update(x)
        tor.update(torch.from_numpy(x).to(device))
    ra, rb = ref.ranges(), tor.ranges()
    for k in ("lo", "hi"):
        assert not np.signbit(np.asarray(ra[k])).any(), k
        np.testing.assert_array_equal(_bits(ra[k]), _bits(rb[k]), err_msg=k)


@pytest.mark.parametrize("name", ["mxfp8", "mxint8", "nvfp4", "uint8_float32_uint8_t0", "bfp16"])
def test_observer_of_the_input_gives_the_computed_cast(name) -> None:
    x = _batches(n=1)[0]
    x = np.where(np.isfinite(x), x, np.float32(0))
    obs = tcast_ref.Observer(name)
    obs.update(x)
    computed = tcast_ref.cast(x, name, castmode="compress")
    given = tcast_ref.cast(x, name, castmode="compress", **obs.scales())
    for part in ("data", "scale", "zero", "tenscale"):
        a, b = getattr(computed, part), getattr(given, part)
        assert (a is None) == (b is None), part
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=part)


# ------------------------------------------------------------------ torch.ao observers
def test_minmax_affine_against_torch_ao() -> None:
    xs = [x.astype(np.float32) for x in _batches()]
    xs = [np.where(np.isfinite(x), x, np.float32(0)) for x in xs]  # torch.ao propagates NaN
    ao = MinMaxObserver(dtype=torch.quint8, qscheme=torch.per_tensor_affine)
    obs = tcast_ref.Observer("uint8_float32_uint8")
    for x in xs:
        ao(torch.from_numpy(x))
        obs.update(x)
    r = obs.ranges()
    assert r["lo"] == min(ao.min_val.item(), 0.0) and r["hi"] == max(ao.max_val.item(), 0.0)
    scale, zp = ao.calculate_qparams()
    got = obs.scales()
    assert _bits(got["scale"]) == _bits(scale.numpy()[0])  # (hi - lo) / 255 in float32
    # zero points: torch.ao rounds lo / s, tcast -lo * fl32(1/s) (§11): at most one apart
    assert abs(float(got["zero"]) - zp.item()) <= 1


def test_minmax_per_channel_and_moving_average_against_torch_ao() -> None:
    x = np.where(np.isfinite(_batches()[0]), _batches()[0], np.float32(0))
    ao = PerChannelMinMaxObserver(ch_axis=0, dtype=torch.quint8)
    ao(torch.from_numpy(x))
    obs = tcast_ref.Observer("uint8_float32_uint8_t0")
    obs.update(x)
    r = obs.ranges()
    np.testing.assert_array_equal(r["lo"][:, 0], np.minimum(ao.min_val.numpy(), 0))
    np.testing.assert_array_equal(r["hi"][:, 0], np.maximum(ao.max_val.numpy(), 0))
    # the moving average of mixed-sign batches: the same float32 updates as torch.ao
    ao = MovingAverageMinMaxObserver(averaging_constant=0.01, dtype=torch.quint8)
    obs = tcast_ref.Observer("uint8_float32_uint8", ob.MinMax(momentum=0.01))
    for s in range(5):
        b = np.random.default_rng(s).standard_normal(300).astype(np.float32) * (1 + s)
        ao(torch.from_numpy(b))
        obs.update(b)
    r = obs.ranges()
    assert _bits(r["lo"]) == _bits(ao.min_val.numpy()) and _bits(r["hi"]) == _bits(
        ao.max_val.numpy()
    )


def test_minmax_symmetric_against_torch_ao() -> None:
    x = np.where(np.isfinite(_batches()[0]), _batches()[0], np.float32(0))
    ao = MinMaxObserver(dtype=torch.qint8, qscheme=torch.per_tensor_symmetric)
    ao(torch.from_numpy(x))
    obs = tcast_ref.Observer("int8_float32")
    obs.update(x)
    amax = max(-ao.min_val.item(), ao.max_val.item())
    assert float(obs.ranges()["amax"]) == amax
    # torch.ao divides by 127.5, tcast by maxint 127 (§11)
    assert _bits(obs.scales()["scale"]) == _bits(np.float32(np.float32(amax) / np.float32(127)))
    assert ao.calculate_qparams()[0].item() == np.float32(np.float32(amax) / np.float32(127.5))


# ------------------------------------------------------------------ TransformerEngine
def _te_delayed(amaxes: list[float], length: int, algo: str, margin: int, fmax: float):
    """TransformerEngine's delayed-scaling update, re-derived: the cast writes history[0];
    the step takes max (or history[0]), rolls the history by -1 and zeroes row 0; the scale
    (an encode multiplier) is kept where the amax is not positive or not finite."""
    hist = torch.zeros(length)
    scale = torch.ones(())
    out = []
    for a in amaxes:
        hist[0] = a
        amax = hist.max() if algo == "max" else hist[0].clone()
        if length > 1:
            hist.copy_(torch.roll(hist, -1, 0))
        hist[0] = 0.0
        sf = (fmax / amax) / (2.0**margin)
        sf = torch.where(amax > 0.0, sf, scale)
        scale = torch.where(torch.isfinite(amax), sf, scale)
        out.append((float(amax), scale.clone()))
    return out


@pytest.mark.parametrize(("length", "algo", "margin"), [(3, "max", 0), (2, "most_recent", 1)])
def test_amax_history_against_transformer_engine(length, algo, margin) -> None:
    scales = [1.0, 3.0, 0.0, 0.5, 0.25, 2.0]
    rng = np.random.default_rng(7)
    batches = [(rng.standard_normal(64) * s).astype(np.float32) for s in scales]
    te = _te_delayed([float(np.abs(b).max()) for b in batches], length, algo, margin, 448.0)
    obs = tcast_ref.Observer("e4m3fn_float32", ob.AmaxHistory(length, algo, margin))
    last = 0.0
    for b, (amax, sf) in zip(batches, te, strict=True):
        obs.update(b)
        want = amax * 2.0**margin if amax > 0 else last
        last = want
        assert float(obs.ranges()["amax"]) == np.float32(want)
        s = obs.scales()["scale"]
        if amax > 0:  # decode scale vs TE's encode multiplier: within one float32 ulp
            r = np.float32(1) / s
            assert abs(int(_bits(r)) - int(_bits(sf.numpy()))) <= 1


# ------------------------------------------------------------------ Brevitas, ModelOpt
def test_percentile_against_brevitas_kthvalue() -> None:
    x = np.where(np.isfinite(_batches()[0]), _batches()[0], np.float32(0))
    obs = tcast_ref.Observer("int8_float32_t0", ob.Percentile(99.0))
    obs.update(x)
    t = torch.from_numpy(np.abs(x))
    k = int(np.floor(0.01 * 99.0 * x.shape[1] + 0.5))
    np.testing.assert_array_equal(obs.ranges()["amax"][:, 0], t.kthvalue(k, dim=1).values)


def test_histogram_percentile_against_modelopt() -> None:
    rng = np.random.default_rng(3)
    x = (rng.standard_t(3, 20000)).astype(np.float32)
    a = torch.from_numpy(np.abs(x))
    amax = a.max()
    hist = torch.histc(a, bins=512, min=0, max=amax.item()).numpy()  # ModelOpt's counts
    edges = torch.linspace(0, amax.item(), 513).numpy()
    cum = np.cumsum(hist.astype(np.int64))
    for q in (99.0, 99.5):
        obs = tcast_ref.Observer("e4m3fn_float32", ob.HistogramPercentile(q, bins=512))
        obs.update(x)
        got = float(obs.ranges()["amax"])
        exact = int(np.argmax(100 * cum >= q * cum[-1]))  # the same counts, read exactly
        assert got == np.float32(exact * (float(amax) / 512))
        assert abs(got - edges[exact]) <= 1e-6 * float(amax)  # the same left edge
        modelopt = int(np.searchsorted(np.cumsum(hist / hist.sum()), q / 100))
        if q == 99.0:
            assert modelopt == exact
        else:  # 99.5% of 20000 is a whole count: ModelOpt's float32 cdf falls short (§11)
            assert cum[exact] * 200 == 199 * cum[-1] and modelopt == exact + 1


def test_mse_search_against_a_brute_force_argmin() -> None:
    xs = [np.where(np.isfinite(b), b, np.float32(0)) for b in _batches((8, 64), n=2)]
    dt = "int8_float32_t0"
    obs = tcast_ref.Observer(dt, ob.Mse())
    for x in xs:
        obs.update(x)
    for x in xs:
        obs.search(x)
    amax = np.maximum(*(np.abs(x).max(axis=1) for x in xs))
    mults = torch.linspace(0.25, 4.0, 39).numpy()  # ModelOpt's grid, as torch computes it
    assert list(mults) == list(ob.mse_multipliers(tcast.datatype(dt)))
    loss = np.zeros((39, 8))
    for j, m in enumerate(mults):
        scale = np.maximum(amax * m / np.float32(127), np.float32(2.0**-126)).astype(np.float32)
        for x in xs:
            q = tcast_ref.cast(x, dt, scale=scale[:, None])
            loss[j] += ((x.astype(np.float64) - q) ** 2).sum(axis=1)
    want = amax * mults[np.argmin(loss, axis=0)]
    np.testing.assert_array_equal(obs.ranges()["amax"][:, 0], want.astype(np.float32))


# ------------------------------------------------------------------ errors
def test_observer_errors_name_the_problem() -> None:
    obs = tcast_ref.Observer("mxfp8")
    with pytest.raises(SpecError, match="first update"):
        obs.scales()
    with pytest.raises(SpecError, match="float32, float16 or bfloat16"):
        obs.update(np.zeros((4, 32), np.float64))
    obs.update(np.zeros((4, 32), np.float32))
    with pytest.raises(SpecError, match="same blocks"):
        obs.update(np.zeros((5, 32), np.float32))
    mse = tcast_torch.Observer("mxfp8", ob.Mse())
    with pytest.raises(SpecError, match="before search"):
        mse.search(torch.zeros(4, 32))
    mse.update(torch.zeros(4, 32))
    with pytest.raises(SpecError, match="search"):
        mse.scales()
    mse.search(torch.zeros(4, 32))
    with pytest.raises(SpecError, match="after search"):
        mse.update(torch.zeros(4, 32))
    with pytest.raises(SpecError, match="second pass"):
        tcast_torch.Observer("mxfp8").search(torch.zeros(4, 32))
    with pytest.raises(SpecError, match="torch tensors"):
        tcast_torch.Observer("mxfp8").update(np.zeros((4, 32), np.float32))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("method", [ob.MinMax(), ob.Entropy(bins=128, start=64), ob.Mse()])
def test_tensor_scale_only_of_a_two_level_datatype(method, device) -> None:
    xs = _batches()
    xs[1] = xs[1][:13]  # batches of any shape: one block each
    ref = tcast_ref.Observer("nvfp4", method, tensor_scale_only=True)
    tor = tcast_torch.Observer("nvfp4", method, tensor_scale_only=True)
    for step in ("update", "search") if method.two_pass else ("update",):
        for x in xs:
            getattr(ref, step)(x)
            getattr(tor, step)(torch.from_numpy(x).to(device))
    a, b = ref.scales(), tor.scales()
    assert list(a) == ["tensor_scale"] and list(b) == ["tensor_scale"]
    assert _bits(a["tensor_scale"]) == _bits(b["tensor_scale"])
    if isinstance(method, ob.MinMax):  # the tensor amax: a cast's own tensor scale
        whole = np.concatenate([np.where(np.isfinite(x), x, 0).ravel() for x in xs])
        r = tcast_ref.cast(whole.reshape(1, -1).astype(np.float32), "nvfp4", castmode="compress")
        assert _bits(a["tensor_scale"]) == _bits(
            tcast_ref.decode(np.asarray(r.tenscale).reshape(1), tcast.nvfp4.tenscale)
        )
    with pytest.raises(SpecError, match="two-level"):
        tcast_ref.Observer("mxfp8", method, tensor_scale_only=True)


def test_mse_tensor_scale_only_searches_the_tensor_scale() -> None:
    x = np.where(np.isfinite(_batches()[0]), _batches()[0], np.float32(0))
    obs = tcast_ref.Observer("nvfp4", ob.Mse(), tensor_scale_only=True)
    obs.update(x)
    obs.search(x)
    amax = np.float32(np.abs(x).max())
    losses = []
    for m in ob.mse_multipliers(tcast.nvfp4):  # brute force: each candidate's tensor scale
        one = tcast_ref.Observer("nvfp4", tensor_scale_only=True)
        one.update(np.array([amax * np.float32(m)], np.float32))
        q = tcast_ref.cast(x, "nvfp4", **one.scales())
        losses.append(((x.astype(np.float64) - q) ** 2).sum())
    best = int(np.argmin(losses))
    assert len(set(losses)) > 1
    assert float(obs.ranges()["amax"]) == amax * np.float32(ob.mse_multipliers(tcast.nvfp4)[best])


def test_histograms_leave_non_finite_elements_out() -> None:
    rng = np.random.default_rng(5)
    x = rng.standard_normal(1000).astype(np.float32)
    nan = np.concatenate([x, np.full(1000, np.nan), [np.inf, -np.inf]]).astype(np.float32)
    for engine, wrap in ((tcast_ref, np.asarray), (tcast_torch, torch.from_numpy)):
        a = engine.Observer("e4m3fn_float32", ob.HistogramPercentile(60, bins=64))
        b = engine.Observer("e4m3fn_float32", ob.HistogramPercentile(60, bins=64))
        a.update(wrap(np.zeros(10, np.float32)))  # pending zeros count, non-finite do not
        b.update(wrap(np.concatenate([np.zeros(10, np.float32), [np.nan]]).astype(np.float32)))
        a.update(wrap(x))
        b.update(wrap(nan))
        assert _bits(a.ranges()["amax"]) == _bits(b.ranges()["amax"])
        with pytest.raises(SpecError, match="first batch"):
            b.update(wrap(x * np.float32(1e4)))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("margin", [-1, -2])
def test_amax_history_margin_rounds_a_subnormal_product_once(margin, device, monkeypatch):
    """``amax * 2**margin`` below float32's normal range rounds once, to nearest even, as
    the reference's float32 product does (not flushed to zero, not left unrounded), in the
    eager reads and in the compiled scale recipe (CUDA, every read)."""
    from tcast_torch import _observe

    monkeypatch.setattr(_observe, "_EAGER_READS", 0)
    method = ob.AmaxHistory(length=2, margin=margin)
    ref = tcast_ref.Observer("e4m3fn_float32", method)
    tor = tcast_torch.Observer("e4m3fn_float32", method)
    tiny = np.float32(2.0**-149)
    for m in (3, 5, 7, 2**23 + 1, 1):  # odd multiples of the smallest subnormal: ties
        x = np.full((4, 8), tiny * np.float32(m), np.float32)
        ref.update(x)
        tor.update(torch.from_numpy(x).to(device))
        for want, got in (
            (ref.ranges()["amax"], tor.ranges()["amax"]),
            (ref.scales()["scale"], tor.scales()["scale"]),
        ):
            np.testing.assert_array_equal(_bits(want), _bits(got), err_msg=f"{m}")


def test_amax_history_margin_saturates_to_a_finite_range() -> None:
    x = np.array([3e38, 1.0], np.float32)
    for engine, wrap in ((tcast_ref, np.asarray), (tcast_torch, torch.from_numpy)):
        obs = engine.Observer("e4m3fn_float32", ob.AmaxHistory(4, margin=1))
        obs.update(wrap(x))
        assert _bits(obs.ranges()["amax"]) == _bits(np.finfo(np.float32).max)
    with pytest.raises(SpecError):
        tcast_ref.Observer("mxfp8", scalemode="bogus")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["e4m3fn_float32", "int8_float32_t0", "uint8_float32_uint8_t0"])
def test_long_rows_reduced_in_chunks_give_the_reference_bits(name, device) -> None:
    x = _batches((4, 3072), n=1)[0]  # rows of 3 chunks of 1024 (a tensor: 12)
    x[2] = np.abs(x[2]) + np.float32(0.5)  # an all-positive channel: its range holds 0
    ref, tor = tcast_ref.Observer(name), tcast_torch.Observer(name)
    ref.update(x)
    tor.update(torch.from_numpy(x).to(device))
    for k, v in ref.ranges().items():
        np.testing.assert_array_equal(_bits(v), _bits(tor.ranges()[k]), err_msg=k)

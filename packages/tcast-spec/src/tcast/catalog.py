"""The catalog: every named datatype.

Each datatype is a module constant (``tcast.mxfp4``) and a :data:`CATALOG`
entry under its name and its aliases. Names are unique: a name never stands
for two datatypes (upstream reused its 1-D names for 2-D variants; here the
2-D variants end in ``_2d``). A name that is also a number code means exactly
that code's unscaled datatype. ``docs/catalog.md`` lists the catalog.

Letters in the upstream short names: F float32, f float16, b bfloat16,
n e4m3fn, e e8m0, i int8 (zero point); a trailing ``c`` is a channel scale
along the last dimension.

The datatypes with subtile exponent offsets (MSFP) and codebooks are named in
:data:`PREVIEW_CATALOG`: ``datatype("mx9")`` and ``tcast.mx9`` find them like any
catalog name, but they stay out of :data:`CATALOG`, which engines' catalog-wide
tests and the catalog part of the conformance space walk, until every engine
implements them (the reference engine does: ``tcast.cast(x.numpy(), "mx9")``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from .codebook import CodebookSpec
from .datatype import DataType
from .number import number
from .scale import scale

__all__ = [
    "ALIASES",
    "CATALOG",
    "DESCRIPTIONS",
    "NOT_YET_SUPPORTED",
    "PREVIEW_CATALOG",
    "cb40_float32_nf4",
]


def _dt(name: str, ncode: str, scode: str | None = None) -> DataType:
    return DataType(number(ncode), None if scode is None else scale(scode), name)


float32 = _dt("float32", "float32")
"""IEEE binary32."""
float16 = _dt("float16", "float16")
"""IEEE binary16."""
bfloat16 = _dt("bfloat16", "bfloat16")
"""bfloat16."""
float8_e4m3fn = _dt("float8_e4m3fn", "e4m3fn")
"""OCP FP8 E4M3 (torch/ml_dtypes float8_e4m3fn)."""
float8_e5m2 = _dt("float8_e5m2", "e5m2")
"""OCP FP8 E5M2 (torch/ml_dtypes float8_e5m2)."""
float8_e4m3fnuz = _dt("float8_e4m3fnuz", "e4m3b8fnuz")
"""torch/ml_dtypes float8_e4m3fnuz: bias 8, NaN at 0x80."""
float8_e5m2fnuz = _dt("float8_e5m2fnuz", "e5m2b16fnuz")
"""torch/ml_dtypes float8_e5m2fnuz: bias 16, NaN at 0x80."""
float8_e4m3b11fnuz = _dt("float8_e4m3b11fnuz", "e4m3b11fnuz")
"""ml_dtypes float8_e4m3b11fnuz."""
float8_e3m4 = _dt("float8_e3m4", "e3m4")
"""ml_dtypes float8_e3m4 (IEEE)."""
float8_e4m3 = _dt("float8_e4m3", "e4m3")
"""ml_dtypes float8_e4m3 (IEEE, max 240)."""
float6_e2m3fn = _dt("float6_e2m3fn", "e2m3f")
"""OCP FP6 E2M3, finite-only."""
float6_e3m2fn = _dt("float6_e3m2fn", "e3m2f")
"""OCP FP6 E3M2, finite-only."""
float4_e2m1fn = _dt("float4_e2m1fn", "e2m1f")
"""OCP FP4 E2M1, finite-only."""
e2m1fnuz = _dt("e2m1fnuz", "e2m1fnuz")
"""upstream unscaled FP4: NaN at -0 (not OCP FP4)."""
e2m3fnuz = _dt("e2m3fnuz", "e2m3fnuz")
"""upstream unscaled FP6 E2M3: NaN at -0 (not OCP FP6)."""
e3m2fnuz = _dt("e3m2fnuz", "e3m2fnuz")
"""upstream unscaled FP6 E3M2: NaN at -0 (not OCP FP6)."""
binary8p1 = _dt("binary8p1", "binary8p1")
"""IEEE P3109 binary8p1."""
binary8p2 = _dt("binary8p2", "binary8p2")
"""IEEE P3109 binary8p2."""
binary8p3 = _dt("binary8p3", "binary8p3")
"""IEEE P3109 binary8p3."""
binary8p4 = _dt("binary8p4", "binary8p4")
"""IEEE P3109 binary8p4."""
binary8p5 = _dt("binary8p5", "binary8p5")
"""IEEE P3109 binary8p5."""
binary8p6 = _dt("binary8p6", "binary8p6")
"""IEEE P3109 binary8p6."""
binary8p7 = _dt("binary8p7", "binary8p7")
"""IEEE P3109 binary8p7."""
uint8_FF = _dt("uint8_FF", "uint8", "float32_float32")
"""uint8, float32 tensor scale, float32 zero point."""
uint8_FFc = _dt("uint8_FFc", "uint8", "float32_float32_t0")
"""uint8, float32 channel scale, float32 zero point."""
uint8_Fi = _dt("uint8_Fi", "uint8", "float32_int8")
"""uint8, float32 tensor scale, int8 zero point."""
uint8_Fic = _dt("uint8_Fic", "uint8", "float32_int8_t0")
"""uint8, float32 channel scale, int8 zero point."""
uint8_ff = _dt("uint8_ff", "uint8", "float16_float16")
"""uint8, float16 tensor scale, float16 zero point."""
uint8_ffc = _dt("uint8_ffc", "uint8", "float16_float16_t0")
"""uint8, float16 channel scale, float16 zero point."""
uint8_fi = _dt("uint8_fi", "uint8", "float16_int8")
"""uint8, float16 tensor scale, int8 zero point."""
uint8_fic = _dt("uint8_fic", "uint8", "float16_int8_t0")
"""uint8, float16 channel scale, int8 zero point."""
uint8_bb = _dt("uint8_bb", "uint8", "bfloat16_bfloat16")
"""uint8, bfloat16 tensor scale, bfloat16 zero point."""
uint8_bbc = _dt("uint8_bbc", "uint8", "bfloat16_bfloat16_t0")
"""uint8, bfloat16 channel scale, bfloat16 zero point."""
uint8_bi = _dt("uint8_bi", "uint8", "bfloat16_int8")
"""uint8, bfloat16 tensor scale, int8 zero point."""
uint8_bic = _dt("uint8_bic", "uint8", "bfloat16_int8_t0")
"""uint8, bfloat16 channel scale, int8 zero point."""
uint8_ni = _dt("uint8_ni", "uint8", "e4m3fn_int8")
"""uint8, e4m3fn tensor scale, int8 zero point."""
uint8_nic = _dt("uint8_nic", "uint8", "e4m3fn_int8_t0")
"""uint8, e4m3fn channel scale, int8 zero point."""
uint8_ei = _dt("uint8_ei", "uint8", "e8m0_int8")
"""uint8, e8m0 tensor scale, int8 zero point."""
uint8_eic = _dt("uint8_eic", "uint8", "e8m0_int8_t0")
"""uint8, e8m0 channel scale, int8 zero point."""
uint4_FFc = _dt("uint4_FFc", "uint4", "float32_float32_t0")
"""uint4, float32 channel scale, float32 zero point."""
uint4_Fic = _dt("uint4_Fic", "uint4", "float32_int8_t0")
"""uint4, float32 channel scale, int8 zero point."""
uint4_ffc = _dt("uint4_ffc", "uint4", "float16_float16_t0")
"""uint4, float16 channel scale, float16 zero point."""
uint4_fic = _dt("uint4_fic", "uint4", "float16_int8_t0")
"""uint4, float16 channel scale, int8 zero point."""
uint4_bbc = _dt("uint4_bbc", "uint4", "bfloat16_bfloat16_t0")
"""uint4, bfloat16 channel scale, bfloat16 zero point."""
uint4_bic = _dt("uint4_bic", "uint4", "bfloat16_int8_t0")
"""uint4, bfloat16 channel scale, int8 zero point."""
uint4_nic = _dt("uint4_nic", "uint4", "e4m3fn_int8_t0")
"""uint4, e4m3fn channel scale, int8 zero point."""
uint4_eic = _dt("uint4_eic", "uint4", "e8m0_int8_t0")
"""uint4, e8m0 channel scale, int8 zero point."""
int8_F = _dt("int8_F", "int8", "float32")
"""int8, float32 tensor scale."""
int8_Fc = _dt("int8_Fc", "int8", "float32_t0")
"""int8, float32 channel scale."""
int8_f = _dt("int8_f", "int8", "float16")
"""int8, float16 tensor scale."""
int8_fc = _dt("int8_fc", "int8", "float16_t0")
"""int8, float16 channel scale."""
int8_b = _dt("int8_b", "int8", "bfloat16")
"""int8, bfloat16 tensor scale."""
int8_bc = _dt("int8_bc", "int8", "bfloat16_t0")
"""int8, bfloat16 channel scale."""
int8_n = _dt("int8_n", "int8", "e4m3fn")
"""int8, e4m3fn tensor scale."""
int8_nc = _dt("int8_nc", "int8", "e4m3fn_t0")
"""int8, e4m3fn channel scale."""
int8_e = _dt("int8_e", "int8", "e8m0")
"""int8, e8m0 tensor scale."""
int8_ec = _dt("int8_ec", "int8", "e8m0_t0")
"""int8, e8m0 channel scale."""
int4_Fc = _dt("int4_Fc", "int4", "float32_t0")
"""int4, float32 channel scale."""
int4_fc = _dt("int4_fc", "int4", "float16_t0")
"""int4, float16 channel scale."""
int4_bc = _dt("int4_bc", "int4", "bfloat16_t0")
"""int4, bfloat16 channel scale."""
int4_nc = _dt("int4_nc", "int4", "e4m3fn_t0")
"""int4, e4m3fn channel scale."""
int4_ec = _dt("int4_ec", "int4", "e8m0_t0")
"""int4, e8m0 channel scale."""
bf8_F = _dt("bf8_F", "e5m2", "float32")
"""e5m2, float32 tensor scale."""
bf8_Fc = _dt("bf8_Fc", "e5m2", "float32_t0")
"""e5m2, float32 channel scale."""
bf8_f = _dt("bf8_f", "e5m2", "float16")
"""e5m2, float16 tensor scale."""
bf8_fc = _dt("bf8_fc", "e5m2", "float16_t0")
"""e5m2, float16 channel scale."""
bf8_b = _dt("bf8_b", "e5m2", "bfloat16")
"""e5m2, bfloat16 tensor scale."""
bf8_bc = _dt("bf8_bc", "e5m2", "bfloat16_t0")
"""e5m2, bfloat16 channel scale."""
bf8_n = _dt("bf8_n", "e5m2", "e4m3fn")
"""e5m2, e4m3fn tensor scale."""
bf8_nc = _dt("bf8_nc", "e5m2", "e4m3fn_t0")
"""e5m2, e4m3fn channel scale."""
bf8_e = _dt("bf8_e", "e5m2", "e8m0")
"""e5m2, e8m0 tensor scale."""
bf8_ec = _dt("bf8_ec", "e5m2", "e8m0_t0")
"""e5m2, e8m0 channel scale."""
bf8n_F = _dt("bf8n_F", "e5m2b16fnuz", "float32")
"""e5m2b16fnuz, float32 tensor scale."""
bf8n_Fc = _dt("bf8n_Fc", "e5m2b16fnuz", "float32_t0")
"""e5m2b16fnuz, float32 channel scale."""
bf8n_f = _dt("bf8n_f", "e5m2b16fnuz", "float16")
"""e5m2b16fnuz, float16 tensor scale."""
bf8n_fc = _dt("bf8n_fc", "e5m2b16fnuz", "float16_t0")
"""e5m2b16fnuz, float16 channel scale."""
bf8n_b = _dt("bf8n_b", "e5m2b16fnuz", "bfloat16")
"""e5m2b16fnuz, bfloat16 tensor scale."""
bf8n_bc = _dt("bf8n_bc", "e5m2b16fnuz", "bfloat16_t0")
"""e5m2b16fnuz, bfloat16 channel scale."""
bf8n_n = _dt("bf8n_n", "e5m2b16fnuz", "e4m3fn")
"""e5m2b16fnuz, e4m3fn tensor scale."""
bf8n_nc = _dt("bf8n_nc", "e5m2b16fnuz", "e4m3fn_t0")
"""e5m2b16fnuz, e4m3fn channel scale."""
bf8n_e = _dt("bf8n_e", "e5m2b16fnuz", "e8m0")
"""e5m2b16fnuz, e8m0 tensor scale."""
bf8n_ec = _dt("bf8n_ec", "e5m2b16fnuz", "e8m0_t0")
"""e5m2b16fnuz, e8m0 channel scale."""
fp8_F = _dt("fp8_F", "e4m3fn", "float32")
"""e4m3fn, float32 tensor scale."""
fp8_Fc = _dt("fp8_Fc", "e4m3fn", "float32_t0")
"""e4m3fn, float32 channel scale."""
fp8_f = _dt("fp8_f", "e4m3fn", "float16")
"""e4m3fn, float16 tensor scale."""
fp8_fc = _dt("fp8_fc", "e4m3fn", "float16_t0")
"""e4m3fn, float16 channel scale."""
fp8_b = _dt("fp8_b", "e4m3fn", "bfloat16")
"""e4m3fn, bfloat16 tensor scale."""
fp8_bc = _dt("fp8_bc", "e4m3fn", "bfloat16_t0")
"""e4m3fn, bfloat16 channel scale."""
fp8_n = _dt("fp8_n", "e4m3fn", "e4m3fn")
"""e4m3fn, e4m3fn tensor scale."""
fp8_nc = _dt("fp8_nc", "e4m3fn", "e4m3fn_t0")
"""e4m3fn, e4m3fn channel scale."""
fp8_e = _dt("fp8_e", "e4m3fn", "e8m0")
"""e4m3fn, e8m0 tensor scale."""
fp8_ec = _dt("fp8_ec", "e4m3fn", "e8m0_t0")
"""e4m3fn, e8m0 channel scale."""
fp8n_F = _dt("fp8n_F", "e4m3b8fnuz", "float32")
"""e4m3b8fnuz, float32 tensor scale."""
fp8n_Fc = _dt("fp8n_Fc", "e4m3b8fnuz", "float32_t0")
"""e4m3b8fnuz, float32 channel scale."""
fp8n_f = _dt("fp8n_f", "e4m3b8fnuz", "float16")
"""e4m3b8fnuz, float16 tensor scale."""
fp8n_fc = _dt("fp8n_fc", "e4m3b8fnuz", "float16_t0")
"""e4m3b8fnuz, float16 channel scale."""
fp8n_b = _dt("fp8n_b", "e4m3b8fnuz", "bfloat16")
"""e4m3b8fnuz, bfloat16 tensor scale."""
fp8n_bc = _dt("fp8n_bc", "e4m3b8fnuz", "bfloat16_t0")
"""e4m3b8fnuz, bfloat16 channel scale."""
fp8n_n = _dt("fp8n_n", "e4m3b8fnuz", "e4m3fn")
"""e4m3b8fnuz, e4m3fn tensor scale."""
fp8n_nc = _dt("fp8n_nc", "e4m3b8fnuz", "e4m3fn_t0")
"""e4m3b8fnuz, e4m3fn channel scale."""
fp8n_e = _dt("fp8n_e", "e4m3b8fnuz", "e8m0")
"""e4m3b8fnuz, e8m0 tensor scale."""
fp8n_ec = _dt("fp8n_ec", "e4m3b8fnuz", "e8m0_t0")
"""e4m3b8fnuz, e8m0 channel scale."""
mxfp8 = _dt("mxfp8", "e4m3fn", "e8m0_t32")
"""OCP MXFP8 (E4M3), e8m0 scale per 32."""
mxfp8e5 = _dt("mxfp8e5", "e5m2", "e8m0_t32")
"""OCP MXFP8 (E5M2), e8m0 scale per 32."""
mxfp6e3 = _dt("mxfp6e3", "e3m2f", "e8m0_t32")
"""OCP MXFP6 (E3M2), e8m0 scale per 32."""
mxfp6e2 = _dt("mxfp6e2", "e2m3f", "e8m0_t32")
"""OCP MXFP6 (E2M3), e8m0 scale per 32."""
mxfp4 = _dt("mxfp4", "e2m1f", "e8m0_t32")
"""OCP MXFP4 (E2M1), e8m0 scale per 32."""
mxint8 = _dt("mxint8", "int8", "e8m0_t32")
"""OCP MXINT8 (symmetric: codes -127..127), e8m0 scale per 32."""
mxint4 = _dt("mxint4", "int4", "e8m0_t32")
"""MXINT4 (symmetric: codes -7..7), e8m0 scale per 32."""
mxfp8t16 = _dt("mxfp8t16", "e4m3fn", "e8m0_t16")
"""MXFP8 (E4M3)-like, e8m0 scale per 16."""
mxfp8e5t16 = _dt("mxfp8e5t16", "e5m2", "e8m0_t16")
"""MXFP8 (E5M2)-like, e8m0 scale per 16."""
mxfp6e3t16 = _dt("mxfp6e3t16", "e3m2f", "e8m0_t16")
"""MXFP6 (E3M2)-like, e8m0 scale per 16."""
mxfp6e2t16 = _dt("mxfp6e2t16", "e2m3f", "e8m0_t16")
"""MXFP6 (E2M3)-like, e8m0 scale per 16."""
mxfp4t16 = _dt("mxfp4t16", "e2m1f", "e8m0_t16")
"""MXFP4 (E2M1)-like, e8m0 scale per 16."""
mxint8t16 = _dt("mxint8t16", "int8", "e8m0_t16")
"""MXINT8 (symmetric: codes -127..127)-like, e8m0 scale per 16."""
mxint4t16 = _dt("mxint4t16", "int4", "e8m0_t16")
"""MXINT4 (symmetric: codes -7..7)-like, e8m0 scale per 16."""
mxfp8_2d = _dt("mxfp8_2d", "e4m3fn", "e8m0_t32_t32")
"""MXFP8 (E4M3)-like, e8m0 scale per 32x32 tile."""
mxfp8e5_2d = _dt("mxfp8e5_2d", "e5m2", "e8m0_t32_t32")
"""MXFP8 (E5M2)-like, e8m0 scale per 32x32 tile."""
mxfp6e3_2d = _dt("mxfp6e3_2d", "e3m2f", "e8m0_t32_t32")
"""MXFP6 (E3M2)-like, e8m0 scale per 32x32 tile."""
mxfp6e2_2d = _dt("mxfp6e2_2d", "e2m3f", "e8m0_t32_t32")
"""MXFP6 (E2M3)-like, e8m0 scale per 32x32 tile."""
mxfp4_2d = _dt("mxfp4_2d", "e2m1f", "e8m0_t32_t32")
"""MXFP4 (E2M1)-like, e8m0 scale per 32x32 tile."""
mxint8_2d = _dt("mxint8_2d", "int8", "e8m0_t32_t32")
"""MXINT8 (symmetric: codes -127..127)-like, e8m0 scale per 32x32 tile."""
mxint4_2d = _dt("mxint4_2d", "int4", "e8m0_t32_t32")
"""MXINT4 (symmetric: codes -7..7)-like, e8m0 scale per 32x32 tile."""
nvfp4 = _dt("nvfp4", "e2m1f", "e4m3fn_float32_t16")
"""NVFP4: E2M1, E4M3 scale per 16, float32 tensor scale."""
nvf4 = _dt("nvf4", "e2m1f", "e4m3fn_t16")
"""upstream nvf4: E2M1, E4M3 scale per 16, no tensor scale."""
bfp16 = _dt("bfp16", "int8", "e8m0_t8")
"""block floating point: int8, e8m0 scale per 8."""
bfp16t16 = _dt("bfp16t16", "int8", "e8m0_t16")
"""block floating point: int8, e8m0 scale per 16."""

cb40_float32_nf4: CodebookSpec = number("cb40_float32_nf4")  # type: ignore[assignment]
"""NF4's given table: bitsandbytes' 16 float32 values, ascending, -1.0 .. 1.0."""
mx9 = _dt("mx9", "int8", "e8m0_t16s2o1")
"""MSFP MX9: int8, e8m0 scale per 16, a 1-bit exponent offset per 2."""
mx6 = _dt("mx6", "int5", "e8m0_t16s2o1")
"""MSFP MX6: int5, e8m0 scale per 16, a 1-bit exponent offset per 2."""
mx4 = _dt("mx4", "int3", "e8m0_t16s2o1")
"""MSFP MX4: int3, e8m0 scale per 16, a 1-bit exponent offset per 2."""
mxfi4 = _dt("mxfi4", "cb41fi_e2m2fnuz", "e8m0_t32s4")
"""4-bit codebook: e2m1 or the integers 1..7 per 4 (e2m2fnuz), e8m0 scale per 32."""
mxfp4m = _dt("mxfp4m", "cb41f01_e2m2fnuz", "e8m0_t32s4")
"""4-bit codebook: e2m1 or e2m1 one code higher per 4 (e2m2fnuz), e8m0 scale per 32."""
mxfp4e = _dt("mxfp4e", "cb42fe0123_e3m2fnuz", "e8m0_t32s8")
"""4-bit codebook: e2m1 at four binades per 8 (e3m2fnuz), e8m0 scale per 32."""
mxfp4f4 = _dt("mxfp4f4", "cb42f1346_e2m3fnuz", "e8m0_t32s8")
"""4-bit codebook: e2m1 at four offsets below the top of e2m3fnuz per 8, e8m0 per 32."""
nf4 = _dt("nf4", "cb40_float32_nf4", "float32_t64")
"""NF4 (bitsandbytes, QLoRA): the 16-value table, float32 scale per 64."""

_CATALOG: dict[str, DataType] = {
    "float32": float32,
    "float16": float16,
    "bfloat16": bfloat16,
    "float8_e4m3fn": float8_e4m3fn,
    "float8_e5m2": float8_e5m2,
    "float8_e4m3fnuz": float8_e4m3fnuz,
    "float8_e5m2fnuz": float8_e5m2fnuz,
    "float8_e4m3b11fnuz": float8_e4m3b11fnuz,
    "float8_e3m4": float8_e3m4,
    "float8_e4m3": float8_e4m3,
    "float6_e2m3fn": float6_e2m3fn,
    "float6_e3m2fn": float6_e3m2fn,
    "float4_e2m1fn": float4_e2m1fn,
    "e2m1fnuz": e2m1fnuz,
    "e2m3fnuz": e2m3fnuz,
    "e3m2fnuz": e3m2fnuz,
    "binary8p1": binary8p1,
    "binary8p2": binary8p2,
    "binary8p3": binary8p3,
    "binary8p4": binary8p4,
    "binary8p5": binary8p5,
    "binary8p6": binary8p6,
    "binary8p7": binary8p7,
    "uint8_FF": uint8_FF,
    "uint8_FFc": uint8_FFc,
    "uint8_Fi": uint8_Fi,
    "uint8_Fic": uint8_Fic,
    "uint8_ff": uint8_ff,
    "uint8_ffc": uint8_ffc,
    "uint8_fi": uint8_fi,
    "uint8_fic": uint8_fic,
    "uint8_bb": uint8_bb,
    "uint8_bbc": uint8_bbc,
    "uint8_bi": uint8_bi,
    "uint8_bic": uint8_bic,
    "uint8_ni": uint8_ni,
    "uint8_nic": uint8_nic,
    "uint8_ei": uint8_ei,
    "uint8_eic": uint8_eic,
    "uint4_FFc": uint4_FFc,
    "uint4_Fic": uint4_Fic,
    "uint4_ffc": uint4_ffc,
    "uint4_fic": uint4_fic,
    "uint4_bbc": uint4_bbc,
    "uint4_bic": uint4_bic,
    "uint4_nic": uint4_nic,
    "uint4_eic": uint4_eic,
    "int8_F": int8_F,
    "int8_Fc": int8_Fc,
    "int8_f": int8_f,
    "int8_fc": int8_fc,
    "int8_b": int8_b,
    "int8_bc": int8_bc,
    "int8_n": int8_n,
    "int8_nc": int8_nc,
    "int8_e": int8_e,
    "int8_ec": int8_ec,
    "int4_Fc": int4_Fc,
    "int4_fc": int4_fc,
    "int4_bc": int4_bc,
    "int4_nc": int4_nc,
    "int4_ec": int4_ec,
    "bf8_F": bf8_F,
    "bf8_Fc": bf8_Fc,
    "bf8_f": bf8_f,
    "bf8_fc": bf8_fc,
    "bf8_b": bf8_b,
    "bf8_bc": bf8_bc,
    "bf8_n": bf8_n,
    "bf8_nc": bf8_nc,
    "bf8_e": bf8_e,
    "bf8_ec": bf8_ec,
    "bf8n_F": bf8n_F,
    "bf8n_Fc": bf8n_Fc,
    "bf8n_f": bf8n_f,
    "bf8n_fc": bf8n_fc,
    "bf8n_b": bf8n_b,
    "bf8n_bc": bf8n_bc,
    "bf8n_n": bf8n_n,
    "bf8n_nc": bf8n_nc,
    "bf8n_e": bf8n_e,
    "bf8n_ec": bf8n_ec,
    "fp8_F": fp8_F,
    "fp8_Fc": fp8_Fc,
    "fp8_f": fp8_f,
    "fp8_fc": fp8_fc,
    "fp8_b": fp8_b,
    "fp8_bc": fp8_bc,
    "fp8_n": fp8_n,
    "fp8_nc": fp8_nc,
    "fp8_e": fp8_e,
    "fp8_ec": fp8_ec,
    "fp8n_F": fp8n_F,
    "fp8n_Fc": fp8n_Fc,
    "fp8n_f": fp8n_f,
    "fp8n_fc": fp8n_fc,
    "fp8n_b": fp8n_b,
    "fp8n_bc": fp8n_bc,
    "fp8n_n": fp8n_n,
    "fp8n_nc": fp8n_nc,
    "fp8n_e": fp8n_e,
    "fp8n_ec": fp8n_ec,
    "mxfp8": mxfp8,
    "mxfp8e5": mxfp8e5,
    "mxfp6e3": mxfp6e3,
    "mxfp6e2": mxfp6e2,
    "mxfp4": mxfp4,
    "mxint8": mxint8,
    "mxint4": mxint4,
    "mxfp8t16": mxfp8t16,
    "mxfp8e5t16": mxfp8e5t16,
    "mxfp6e3t16": mxfp6e3t16,
    "mxfp6e2t16": mxfp6e2t16,
    "mxfp4t16": mxfp4t16,
    "mxint8t16": mxint8t16,
    "mxint4t16": mxint4t16,
    "mxfp8_2d": mxfp8_2d,
    "mxfp8e5_2d": mxfp8e5_2d,
    "mxfp6e3_2d": mxfp6e3_2d,
    "mxfp6e2_2d": mxfp6e2_2d,
    "mxfp4_2d": mxfp4_2d,
    "mxint8_2d": mxint8_2d,
    "mxint4_2d": mxint4_2d,
    "nvfp4": nvfp4,
    "nvf4": nvf4,
    "bfp16": bfp16,
    "bfp16t16": bfp16t16,
}

_ALIASES: dict[str, str] = {
    "fp32": "float32",
    "fp16": "float16",
    "bf16": "bfloat16",
    "fp8": "float8_e4m3fn",
    "e4m3fn": "float8_e4m3fn",
    "bf8": "float8_e5m2",
    "e5m2": "float8_e5m2",
    "fp8n": "float8_e4m3fnuz",
    "e4m3b8fnuz": "float8_e4m3fnuz",
    "bf8n": "float8_e5m2fnuz",
    "e5m2b16fnuz": "float8_e5m2fnuz",
    "e4m3b11fnuz": "float8_e4m3b11fnuz",
    "e3m4": "float8_e3m4",
    "e4m3": "float8_e4m3",
    "e2m3f": "float6_e2m3fn",
    "e3m2f": "float6_e3m2fn",
    "e2m1f": "float4_e2m1fn",
    "mxfp8e4": "mxfp8",
    "mxbf8": "mxfp8e5",
    "mxbf6": "mxfp6e3",
    "mxbfp": "mxfp6e2",
    "mxfp4e2": "mxfp4",
    "mxfp8e4t16": "mxfp8t16",
    "mxbf8t16": "mxfp8e5t16",
    "mxbf6t16": "mxfp6e3t16",
    "mxbfpt16": "mxfp6e2t16",
    "mxfp4e2t16": "mxfp4t16",
}
_CATALOG.update({alias: _CATALOG[primary] for alias, primary in _ALIASES.items()})

#: Every catalog name (aliases included) to its datatype (read-only).
CATALOG: Mapping[str, DataType] = MappingProxyType(_CATALOG)
#: Named MSFP and codebook datatypes (read-only): found by :func:`tcast.datatype` like
#: catalog names, kept out of :data:`CATALOG` until every engine implements them.
PREVIEW_CATALOG: Mapping[str, DataType] = MappingProxyType(
    {dt.name: dt for dt in (mx9, mx6, mx4, mxfi4, mxfp4m, mxfp4e, mxfp4f4, nf4)}
)
#: Alias to primary name (read-only).
ALIASES: Mapping[str, str] = MappingProxyType(_ALIASES)

#: Primary name to a one-line description (read-only).
DESCRIPTIONS: Mapping[str, str] = MappingProxyType(
    {
        "float32": "IEEE binary32",
        "float16": "IEEE binary16",
        "bfloat16": "bfloat16",
        "float8_e4m3fn": "OCP FP8 E4M3 (torch/ml_dtypes float8_e4m3fn)",
        "float8_e5m2": "OCP FP8 E5M2 (torch/ml_dtypes float8_e5m2)",
        "float8_e4m3fnuz": "torch/ml_dtypes float8_e4m3fnuz: bias 8, NaN at 0x80",
        "float8_e5m2fnuz": "torch/ml_dtypes float8_e5m2fnuz: bias 16, NaN at 0x80",
        "float8_e4m3b11fnuz": "ml_dtypes float8_e4m3b11fnuz",
        "float8_e3m4": "ml_dtypes float8_e3m4 (IEEE)",
        "float8_e4m3": "ml_dtypes float8_e4m3 (IEEE, max 240)",
        "float6_e2m3fn": "OCP FP6 E2M3, finite-only",
        "float6_e3m2fn": "OCP FP6 E3M2, finite-only",
        "float4_e2m1fn": "OCP FP4 E2M1, finite-only",
        "e2m1fnuz": "upstream unscaled FP4: NaN at -0 (not OCP FP4)",
        "e2m3fnuz": "upstream unscaled FP6 E2M3: NaN at -0 (not OCP FP6)",
        "e3m2fnuz": "upstream unscaled FP6 E3M2: NaN at -0 (not OCP FP6)",
        "binary8p1": "IEEE P3109 binary8p1",
        "binary8p2": "IEEE P3109 binary8p2",
        "binary8p3": "IEEE P3109 binary8p3",
        "binary8p4": "IEEE P3109 binary8p4",
        "binary8p5": "IEEE P3109 binary8p5",
        "binary8p6": "IEEE P3109 binary8p6",
        "binary8p7": "IEEE P3109 binary8p7",
        "uint8_FF": "uint8, float32 tensor scale, float32 zero point",
        "uint8_FFc": "uint8, float32 channel scale, float32 zero point",
        "uint8_Fi": "uint8, float32 tensor scale, int8 zero point",
        "uint8_Fic": "uint8, float32 channel scale, int8 zero point",
        "uint8_ff": "uint8, float16 tensor scale, float16 zero point",
        "uint8_ffc": "uint8, float16 channel scale, float16 zero point",
        "uint8_fi": "uint8, float16 tensor scale, int8 zero point",
        "uint8_fic": "uint8, float16 channel scale, int8 zero point",
        "uint8_bb": "uint8, bfloat16 tensor scale, bfloat16 zero point",
        "uint8_bbc": "uint8, bfloat16 channel scale, bfloat16 zero point",
        "uint8_bi": "uint8, bfloat16 tensor scale, int8 zero point",
        "uint8_bic": "uint8, bfloat16 channel scale, int8 zero point",
        "uint8_ni": "uint8, e4m3fn tensor scale, int8 zero point",
        "uint8_nic": "uint8, e4m3fn channel scale, int8 zero point",
        "uint8_ei": "uint8, e8m0 tensor scale, int8 zero point",
        "uint8_eic": "uint8, e8m0 channel scale, int8 zero point",
        "uint4_FFc": "uint4, float32 channel scale, float32 zero point",
        "uint4_Fic": "uint4, float32 channel scale, int8 zero point",
        "uint4_ffc": "uint4, float16 channel scale, float16 zero point",
        "uint4_fic": "uint4, float16 channel scale, int8 zero point",
        "uint4_bbc": "uint4, bfloat16 channel scale, bfloat16 zero point",
        "uint4_bic": "uint4, bfloat16 channel scale, int8 zero point",
        "uint4_nic": "uint4, e4m3fn channel scale, int8 zero point",
        "uint4_eic": "uint4, e8m0 channel scale, int8 zero point",
        "int8_F": "int8, float32 tensor scale",
        "int8_Fc": "int8, float32 channel scale",
        "int8_f": "int8, float16 tensor scale",
        "int8_fc": "int8, float16 channel scale",
        "int8_b": "int8, bfloat16 tensor scale",
        "int8_bc": "int8, bfloat16 channel scale",
        "int8_n": "int8, e4m3fn tensor scale",
        "int8_nc": "int8, e4m3fn channel scale",
        "int8_e": "int8, e8m0 tensor scale",
        "int8_ec": "int8, e8m0 channel scale",
        "int4_Fc": "int4, float32 channel scale",
        "int4_fc": "int4, float16 channel scale",
        "int4_bc": "int4, bfloat16 channel scale",
        "int4_nc": "int4, e4m3fn channel scale",
        "int4_ec": "int4, e8m0 channel scale",
        "bf8_F": "e5m2, float32 tensor scale",
        "bf8_Fc": "e5m2, float32 channel scale",
        "bf8_f": "e5m2, float16 tensor scale",
        "bf8_fc": "e5m2, float16 channel scale",
        "bf8_b": "e5m2, bfloat16 tensor scale",
        "bf8_bc": "e5m2, bfloat16 channel scale",
        "bf8_n": "e5m2, e4m3fn tensor scale",
        "bf8_nc": "e5m2, e4m3fn channel scale",
        "bf8_e": "e5m2, e8m0 tensor scale",
        "bf8_ec": "e5m2, e8m0 channel scale",
        "bf8n_F": "e5m2b16fnuz, float32 tensor scale",
        "bf8n_Fc": "e5m2b16fnuz, float32 channel scale",
        "bf8n_f": "e5m2b16fnuz, float16 tensor scale",
        "bf8n_fc": "e5m2b16fnuz, float16 channel scale",
        "bf8n_b": "e5m2b16fnuz, bfloat16 tensor scale",
        "bf8n_bc": "e5m2b16fnuz, bfloat16 channel scale",
        "bf8n_n": "e5m2b16fnuz, e4m3fn tensor scale",
        "bf8n_nc": "e5m2b16fnuz, e4m3fn channel scale",
        "bf8n_e": "e5m2b16fnuz, e8m0 tensor scale",
        "bf8n_ec": "e5m2b16fnuz, e8m0 channel scale",
        "fp8_F": "e4m3fn, float32 tensor scale",
        "fp8_Fc": "e4m3fn, float32 channel scale",
        "fp8_f": "e4m3fn, float16 tensor scale",
        "fp8_fc": "e4m3fn, float16 channel scale",
        "fp8_b": "e4m3fn, bfloat16 tensor scale",
        "fp8_bc": "e4m3fn, bfloat16 channel scale",
        "fp8_n": "e4m3fn, e4m3fn tensor scale",
        "fp8_nc": "e4m3fn, e4m3fn channel scale",
        "fp8_e": "e4m3fn, e8m0 tensor scale",
        "fp8_ec": "e4m3fn, e8m0 channel scale",
        "fp8n_F": "e4m3b8fnuz, float32 tensor scale",
        "fp8n_Fc": "e4m3b8fnuz, float32 channel scale",
        "fp8n_f": "e4m3b8fnuz, float16 tensor scale",
        "fp8n_fc": "e4m3b8fnuz, float16 channel scale",
        "fp8n_b": "e4m3b8fnuz, bfloat16 tensor scale",
        "fp8n_bc": "e4m3b8fnuz, bfloat16 channel scale",
        "fp8n_n": "e4m3b8fnuz, e4m3fn tensor scale",
        "fp8n_nc": "e4m3b8fnuz, e4m3fn channel scale",
        "fp8n_e": "e4m3b8fnuz, e8m0 tensor scale",
        "fp8n_ec": "e4m3b8fnuz, e8m0 channel scale",
        "mxfp8": "OCP MXFP8 (E4M3), e8m0 scale per 32",
        "mxfp8e5": "OCP MXFP8 (E5M2), e8m0 scale per 32",
        "mxfp6e3": "OCP MXFP6 (E3M2), e8m0 scale per 32",
        "mxfp6e2": "OCP MXFP6 (E2M3), e8m0 scale per 32",
        "mxfp4": "OCP MXFP4 (E2M1), e8m0 scale per 32",
        "mxint8": "OCP MXINT8 (symmetric: codes -127..127), e8m0 scale per 32",
        "mxint4": "MXINT4 (symmetric: codes -7..7), e8m0 scale per 32",
        "mxfp8t16": "MXFP8 (E4M3)-like, e8m0 scale per 16",
        "mxfp8e5t16": "MXFP8 (E5M2)-like, e8m0 scale per 16",
        "mxfp6e3t16": "MXFP6 (E3M2)-like, e8m0 scale per 16",
        "mxfp6e2t16": "MXFP6 (E2M3)-like, e8m0 scale per 16",
        "mxfp4t16": "MXFP4 (E2M1)-like, e8m0 scale per 16",
        "mxint8t16": "MXINT8 (symmetric: codes -127..127)-like, e8m0 scale per 16",
        "mxint4t16": "MXINT4 (symmetric: codes -7..7)-like, e8m0 scale per 16",
        "mxfp8_2d": "MXFP8 (E4M3)-like, e8m0 scale per 32x32 tile",
        "mxfp8e5_2d": "MXFP8 (E5M2)-like, e8m0 scale per 32x32 tile",
        "mxfp6e3_2d": "MXFP6 (E3M2)-like, e8m0 scale per 32x32 tile",
        "mxfp6e2_2d": "MXFP6 (E2M3)-like, e8m0 scale per 32x32 tile",
        "mxfp4_2d": "MXFP4 (E2M1)-like, e8m0 scale per 32x32 tile",
        "mxint8_2d": "MXINT8 (symmetric: codes -127..127)-like, e8m0 scale per 32x32 tile",
        "mxint4_2d": "MXINT4 (symmetric: codes -7..7)-like, e8m0 scale per 32x32 tile",
        "nvfp4": "NVFP4: E2M1, E4M3 scale per 16, float32 tensor scale",
        "nvf4": "upstream nvf4: E2M1, E4M3 scale per 16, no tensor scale",
        "bfp16": "block floating point: int8, e8m0 scale per 8",
        "bfp16t16": "block floating point: int8, e8m0 scale per 16",
        "mx9": "MSFP MX9: int8, e8m0 scale per 16, 1-bit exponent offset per 2",
        "mx6": "MSFP MX6: int5, e8m0 scale per 16, 1-bit exponent offset per 2",
        "mx4": "MSFP MX4: int3, e8m0 scale per 16, 1-bit exponent offset per 2",
        "mxfi4": "codebook: e2m1 or integers 1..7 per 4 (e2m2fnuz), e8m0 scale per 32",
        "mxfp4m": "codebook: e2m1 or e2m1 one code up per 4 (e2m2fnuz), e8m0 scale per 32",
        "mxfp4e": "codebook: e2m1 at 4 binades per 8 (e3m2fnuz), e8m0 scale per 32",
        "mxfp4f4": "codebook: e2m1 at 4 offsets per 8 (e2m3fnuz), e8m0 scale per 32",
        "nf4": "NF4 (bitsandbytes): 16-value float32 table, float32 scale per 64",
    }
)

#: Named datatypes of upstream tensorcast that tcast does not define (read-only; empty:
#: every upstream name is in :data:`CATALOG` or :data:`PREVIEW_CATALOG`).
NOT_YET_SUPPORTED: Mapping[str, str] = MappingProxyType({})

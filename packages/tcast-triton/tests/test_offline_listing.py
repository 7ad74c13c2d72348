"""``_offline.parse_listing``: every instruction of a ``cuobjdump -sass`` listing.

Triton 3.6's own listing (``asm["sass"]``) stops at byte offset 0x10000 (instruction 4096),
so the offline SASS counts and spill checks read the listing themselves. The texts below are
written in cuobjdump's format (offset, instruction, encoding; then the control word).
"""

from __future__ import annotations

import importlib

import pytest

offline = importlib.import_module("tcast_triton._offline")


def _listing(instructions: list[tuple[int, str]]) -> str:
    lines = [
        "\tcode for sm_90",
        "\t\tFunction : k",
        '\t.headerflags\t@"EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"',
    ]
    for offset, instr in instructions:
        lines.append(
            f"        /*{offset:04x}*/                   {instr} ;   /* 0x000000ff00017802 */"
        )
        lines.append(
            "                                                              /* 0x000fe20000000f00 */"
        )
    return "\n".join(lines) + "\n"


def test_instructions_past_offset_0x10000_are_read():
    n = 4100  # offsets 0x0000 .. 0x10030: the last four have five hex digits
    text = _listing(
        [(16 * i, "MOV R1, c[0x0][0x28]" if i % 2 else "STL [R1], R2") for i in range(n)]
    )
    rows = offline.parse_listing(text).splitlines()
    assert len(rows) == n
    assert rows[-1].endswith("\tMOV R1, c[0x0][0x28];") and rows[-2].endswith("\tSTL [R1], R2;")
    # control word 0x000fe20000000f00, bits 41-44 stall 1, 45 yield flag 1 ("-"), 46-48 and
    # 49-51 barriers 7 (none), 52-57 wait mask 0: Triton's "--:-:-:-:1"
    assert {r.split("\t")[0] for r in rows} == {"--:-:-:-:1"}


def test_a_listing_with_a_gap_is_refused():
    text = _listing([(0, "MOV R1, R2"), (16, "EXIT"), (48, "BRA 0x20")])
    with pytest.raises(ValueError, match="instruction 2 at offset 0x30"):
        offline.parse_listing(text)


def test_a_listing_without_instructions_is_refused():
    with pytest.raises(ValueError, match="no SASS instruction"):
        offline.parse_listing("\tcode for sm_90\n")
